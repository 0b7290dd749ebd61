// sliding_window on inputs from .npy files (`arch-bench conformance`): the banded prefill, the decode
// step token by token into an empty ring of min(length, W) rows per K/V head, and the fp64 reference.
#include "mechanisms/sliding_window/conformance.hpp"

#include <omp.h>

#include <algorithm>

#include "core/errors.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/sliding_window/options.hpp"
#include "mechanisms/sliding_window/reference.hpp"
#include "mechanisms/softmax_kv/conformance.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = 256;  // as SlidingWindow::unsupported()

const std::vector<std::string> kAxes = {"batch", "heads", "length", "dim"};
const std::vector<std::string> kKvAxes = {"batch", "kv_heads", "length", "dim"};

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, std::int64_t window) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads");
  const std::int64_t kv_heads = inputs.axis("kv_heads");
  const std::int64_t length = inputs.axis("length"), dim = inputs.axis("dim");
  const std::int64_t bh = batch * heads, group = heads / kv_heads, kv_rows = batch * kv_heads;
  const std::vector<std::int64_t> shape = {batch, heads, length, dim};
  const StoredInput<T> q = stored_input<T>(inputs, "q", dtype), k = stored_input<T>(inputs, "k", dtype),
                       v = stored_input<T>(inputs, "v", dtype);

  ConformanceOutputs out;
  std::vector<T> prefill(q.storage.size());
  softmax_prefill(bh, length, dim, q.storage.data(), k.storage.data(), v.storage.data(), prefill.data(), cpu_isa(),
                  AttentionPattern{.group = group, .window = window});
  out.prefill_out = storage_array(shape, prefill);

  // Decode: token t goes to ring slot t % slots and attends over the min(t + 1, slots) rows filled.
  const int threads = omp_get_max_threads();
  const std::int64_t slots = std::max<std::int64_t>(1, std::min(length, window));
  std::vector<T> k_ring(kv_rows * slots * dim), v_ring(k_ring.size()), decoded(q.storage.size());
  std::vector<T> q_t(bh * dim), k_t(kv_rows * dim), v_t(kv_rows * dim), o_t(bh * dim);
  std::vector<float> workspace(plan_softmax_decode(bh, dim, slots, slots, threads, group).workspace_floats());
  for (std::int64_t t = 0; t < length; ++t) {
    gather_token(q.storage.data(), bh, length, dim, t, q_t.data());
    gather_token(k.storage.data(), kv_rows, length, dim, t, k_t.data());
    gather_token(v.storage.data(), kv_rows, length, dim, t, v_t.data());
    const std::int64_t rows = std::min(t + 1, slots);
    const SoftmaxDecodePlan plan = plan_softmax_decode(bh, dim, slots, rows, threads, group);
    softmax_decode_append(plan, k_t.data(), v_t.data(), k_ring.data(), v_ring.data(), t % slots);
    softmax_decode_attend(plan, q_t.data(), k_ring.data(), v_ring.data(), rows, workspace.data(), o_t.data());
    scatter_token(o_t.data(), bh, length, dim, t, decoded.data());
  }
  out.decode_out = storage_array(shape, decoded);

  std::vector<double> reference(q.values.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const MatrixD o = sliding_window_attention_reference(slice_matrix(q.values, h, length, dim),
                                                         slice_matrix(k.values, h / group, length, dim),
                                                         slice_matrix(v.values, h / group, length, dim), window);
    std::copy(o.data.begin(), o.data.end(), reference.begin() + h * length * dim);
  }
  out.reference_out = make_array(shape, reference, NpyDtype::float64);
  return out;
}

class SlidingWindowConformance final : public ConformanceAdapter {
 public:
  ConformanceSpec spec(const MechanismOptions& options) const override {
    require_declared_options(options, "sliding_window");
    ConformanceSpec spec;
    spec.inputs = {{"q", kAxes, "queries"}, {"k", kKvAxes, "keys"}, {"v", kKvAxes, "values"}};
    spec.outputs = standard_outputs(kAxes, "o_t = sum_{t-W<i<=t} softmax_i(q_t.k_i / sqrt(dim)) v_i");
    spec.options = "window W (--window, default 4096): each query attends to itself and the W - 1 tokens before it.";
    spec.notes = "dim is at most 256. kv_heads (the K/V heads, grouped-query attention) divides heads: query head h "
                 "reads K/V head h / (heads / kv_heads). The decode state is a ring of min(length, W) rows per K/V "
                 "head, token t in row t % min(length, W); it is not written (its row order is the kernel's).";
    return spec;
  }

  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const override {
    spec(options);
    require_axis_at_most(inputs, "dim", kMaxDim, "sliding_window");
    require_kv_heads_divide_heads(inputs, "sliding_window");
    const std::int64_t window = window_option().integer(options);
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype, window) : run_typed<float>(inputs, dtype, window);
  }

  std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                           std::uint64_t seed, DType dtype) const override {
    spec(options);
    return generate_grouped_attention_inputs(shape, options, seed, dtype);
  }
#if ARCH_BENCH_HAVE_CUDA
  CudaConformanceRun cuda_kernels() const override { return run_on_cuda; }

 private:
  // softmax_kv's CUDA kernels with the window (mechanisms/softmax_kv/cuda_conformance.cpp).
  static void run_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& cuda) {
    attention_conformance_on_cuda("sliding_window", window_option().integer(out.options), inputs, dtype, out, cuda);
  }
#endif
};

}  // namespace

const ConformanceAdapter& sliding_window_conformance() {
  static const SlidingWindowConformance adapter;
  return adapter;
}

}  // namespace arch_bench
