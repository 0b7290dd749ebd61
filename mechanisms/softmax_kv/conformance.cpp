// softmax_kv on inputs from .npy files (`arch-bench conformance`): the tiled prefill, the decode
// step token by token into an empty K/V cache, and the fp64 reference.
#include <omp.h>

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

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype) {
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
                  AttentionPattern{.group = group});
  out.prefill_out = storage_array(shape, prefill);

  // Decode: token t is appended to the cache at position t and attends over positions 0..t. The
  // split of the context is planned per step, as the harness plans it for a context of t + 1.
  const int threads = omp_get_max_threads();
  std::vector<T> k_cache(k.storage.size()), v_cache(v.storage.size()), decoded(q.storage.size());
  std::vector<T> q_t(bh * dim), k_t(kv_rows * dim), v_t(kv_rows * dim), o_t(bh * dim);
  std::vector<float> workspace(plan_softmax_decode(bh, dim, length, length, threads, group).workspace_floats());
  for (std::int64_t t = 0; t < length; ++t) {
    gather_token(q.storage.data(), bh, length, dim, t, q_t.data());
    gather_token(k.storage.data(), kv_rows, length, dim, t, k_t.data());
    gather_token(v.storage.data(), kv_rows, length, dim, t, v_t.data());
    const SoftmaxDecodePlan plan = plan_softmax_decode(bh, dim, length, t + 1, threads, group);
    softmax_decode_step(plan, q_t.data(), k_t.data(), v_t.data(), k_cache.data(), v_cache.data(), t,
                        workspace.data(), o_t.data());
    scatter_token(o_t.data(), bh, length, dim, t, decoded.data());
  }
  out.decode_out = storage_array(shape, decoded);

  std::vector<double> reference(q.values.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const MatrixD o = softmax_attention_reference(slice_matrix(q.values, h, length, dim),
                                                  slice_matrix(k.values, h / group, length, dim),
                                                  slice_matrix(v.values, h / group, length, dim));
    std::copy(o.data.begin(), o.data.end(), reference.begin() + h * length * dim);
  }
  out.reference_out = make_array(shape, reference, NpyDtype::float64);

  // The explicit history the decode steps built: the rounded k and v, as the kernel stored them.
  out.states.push_back({"k_cache", storage_array(kv_shape, k_cache), std::nullopt, std::nullopt});
  out.states.push_back({"v_cache", storage_array(kv_shape, v_cache), std::nullopt, std::nullopt});
  return out;
}

class SoftmaxKvConformance final : public ConformanceAdapter {
 public:
  ConformanceSpec spec(const MechanismOptions& options) const override {
    require_declared_options(options, "softmax_kv");
    ConformanceSpec spec;
    spec.inputs = {{"q", kAxes, "queries"}, {"k", kKvAxes, "keys"}, {"v", kKvAxes, "values"}};
    spec.outputs = standard_outputs(kAxes, "o_t = sum_{i<=t} softmax_i(q_t.k_i / sqrt(dim)) v_i");
    spec.outputs.push_back({"k_cache", kKvAxes, NpyDtype::float32, "the K cache after the last decode step"});
    spec.outputs.push_back({"v_cache", kKvAxes, NpyDtype::float32, "the V cache after the last decode step"});
    spec.notes = "dim is at most 256. kv_heads (the K/V heads, grouped-query attention) divides heads: query "
                 "head h reads K/V head h / (heads / kv_heads); kv_heads = heads is multi-head attention.";
    return spec;
  }

  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const override {
    spec(options);
    require_axis_at_most(inputs, "dim", kMaxDim, "softmax_kv");
    require_kv_heads_divide_heads(inputs, "softmax_kv");
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype) : run_typed<float>(inputs, dtype);
  }

  std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                           std::uint64_t seed, DType dtype) const override {
    spec(options);
    return generate_grouped_attention_inputs(shape, options, seed, dtype);
  }
#if ARCH_BENCH_HAVE_CUDA
  CudaConformanceRun cuda_kernels() const override { return softmax_kv_conformance_on_cuda; }
#endif
};

}  // namespace

const ConformanceAdapter& softmax_kv_conformance() {
  static const SoftmaxKvConformance adapter;
  return adapter;
}

}  // namespace arch_bench
