// softmax_kv on inputs from .npy files (`arch-bench conformance`): the tiled prefill, the decode
// step token by token into an empty K/V cache, and the fp64 reference; with a window, the same run
// for sliding_window (attention_conformance_on_cpu).
#include <omp.h>

#include <algorithm>

#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "mechanisms/softmax_kv/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = 256;  // as SoftmaxKv::unsupported()

const std::vector<std::string> kAxes = {"batch", "heads", "length", "dim"};
const std::vector<std::string> kKvAxes = {"batch", "kv_heads", "length", "dim"};

// window 0: softmax_kv (causal prefill; decode appends token t at cache row t, the cache written
// as the k_cache and v_cache states). W > 0: sliding_window (banded prefill; decode into a ring of
// min(length, W) rows, token t in row t % slots attending over the min(t + 1, slots) rows filled;
// the ring is not an output, its row order being the kernel's). With slots = length the ring is the
// cache, so both are one loop.
template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, std::int64_t window) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads");
  const std::int64_t kv_heads = inputs.axis("kv_heads");
  const std::int64_t length = inputs.axis("length"), dim = inputs.axis("dim");
  const std::int64_t bh = batch * heads, group = heads / kv_heads, kv_rows = batch * kv_heads;
  const std::vector<std::int64_t> shape = {batch, heads, length, dim};
  const std::vector<std::int64_t> kv_shape = {batch, kv_heads, length, dim};
  const StoredInput<T> q = stored_input<T>(inputs, "q", dtype), k = stored_input<T>(inputs, "k", dtype),
                       v = stored_input<T>(inputs, "v", dtype);

  ConformanceOutputs out;
  std::vector<T> prefill(q.storage.size());
  softmax_prefill(bh, length, dim, q.storage.data(), k.storage.data(), v.storage.data(), prefill.data(), cpu_isa(),
                  AttentionPattern{.group = group, .window = window});
  out.prefill_out = storage_array(shape, prefill);

  // The split of the rows attended is planned per step, as the harness plans it.
  const int threads = omp_get_max_threads();
  const std::int64_t slots = window > 0 ? std::max<std::int64_t>(1, std::min(length, window)) : length;
  std::vector<T> k_cache(kv_rows * slots * dim), v_cache(k_cache.size()), decoded(q.storage.size());
  std::vector<T> q_t(bh * dim), k_t(kv_rows * dim), v_t(kv_rows * dim), o_t(bh * dim);
  std::vector<float> workspace(plan_softmax_decode(bh, dim, slots, slots, threads, group).workspace_floats());
  for (std::int64_t t = 0; t < length; ++t) {
    gather_token(q.storage.data(), bh, length, dim, t, q_t.data());
    gather_token(k.storage.data(), kv_rows, length, dim, t, k_t.data());
    gather_token(v.storage.data(), kv_rows, length, dim, t, v_t.data());
    const std::int64_t rows = std::min(t + 1, slots);
    const SoftmaxDecodePlan plan = plan_softmax_decode(bh, dim, slots, rows, threads, group);
    softmax_decode_append(plan, k_t.data(), v_t.data(), k_cache.data(), v_cache.data(), t % slots);
    softmax_decode_attend(plan, q_t.data(), k_cache.data(), v_cache.data(), rows, workspace.data(), o_t.data());
    scatter_token(o_t.data(), bh, length, dim, t, decoded.data());
  }
  out.decode_out = storage_array(shape, decoded);

  std::vector<double> reference(q.values.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const MatrixD o = softmax_attention_reference(slice_matrix(q.values, h, length, dim),
                                                  slice_matrix(k.values, h / group, length, dim),
                                                  slice_matrix(v.values, h / group, length, dim), window);
    std::copy(o.data.begin(), o.data.end(), reference.begin() + h * length * dim);
  }
  out.reference_out = make_array(shape, reference, NpyDtype::float64);

  if (window == 0) {
    // The explicit history the decode steps built: the rounded k and v, as the kernel stored them.
    out.states.push_back({"k_cache", storage_array(kv_shape, k_cache), std::nullopt, std::nullopt});
    out.states.push_back({"v_cache", storage_array(kv_shape, v_cache), std::nullopt, std::nullopt});
  }
  return out;
}

}  // namespace

ConformanceOutputs attention_conformance_on_cpu(const std::string& mechanism, std::int64_t window,
                                                const ConformanceInputs& inputs, DType dtype) {
  require_axis_at_most(inputs, "dim", kMaxDim, mechanism);
  require_kv_heads_divide_heads(inputs, mechanism);
  return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype, window) : run_typed<float>(inputs, dtype, window);
}

namespace {

class SoftmaxKvConformance final : public MechanismConformance {
 public:
  SoftmaxKvConformance()
      : MechanismConformance({"softmax_kv", 0, ARCH_BENCH_CUDA_ONLY(softmax_kv_conformance_on_cuda)}) {}

 private:
  ConformanceSpec describe(const MechanismOptions&) const override {
    ConformanceSpec spec;
    spec.inputs = {{"q", kAxes, "queries"}, {"k", kKvAxes, "keys"}, {"v", kKvAxes, "values"}};
    spec.outputs = standard_outputs(kAxes, "o_t = sum_{i<=t} softmax_i(q_t.k_i / sqrt(dim)) v_i");
    spec.outputs.push_back({"k_cache", kKvAxes, NpyDtype::float32, "the K cache after the last decode step"});
    spec.outputs.push_back({"v_cache", kKvAxes, NpyDtype::float32, "the V cache after the last decode step"});
    spec.notes = "dim is at most 256. kv_heads (the K/V heads, grouped-query attention) divides heads: query "
                 "head h reads K/V head h / (heads / kv_heads); kv_heads = heads is multi-head attention.";
    return spec;
  }

  ConformanceOutputs run_checked(const ConformanceInputs& inputs, DType dtype, const MechanismOptions&) const override {
    return attention_conformance_on_cpu("softmax_kv", 0, inputs, dtype);
  }

  std::map<std::string, NpyArray> draw(const ConformanceShape& shape, const MechanismOptions& options,
                                       std::uint64_t seed, DType dtype) const override {
    return generate_grouped_attention_inputs(shape, options, seed, dtype);
  }
};

}  // namespace

const ConformanceAdapter& softmax_kv_conformance() { return adapter_instance<SoftmaxKvConformance>(); }

}  // namespace arch_bench
