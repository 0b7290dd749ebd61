// softmax_kv on inputs from .npy files (`arch-bench conformance`): the tiled prefill, the decode
// step token by token into an empty K/V cache, and the fp64 reference.
#include <omp.h>

#include "mechanisms/common/inputs.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "mechanisms/softmax_kv/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = 256;  // as SoftmaxKv::unsupported()

const std::vector<std::string> kAxes = {"batch", "heads", "length", "dim"};

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads");
  const std::int64_t length = inputs.axis("length"), dim = inputs.axis("dim");
  const std::int64_t bh = batch * heads;
  const std::vector<std::int64_t> shape = {batch, heads, length, dim};
  const StoredInput<T> q = stored_input<T>(inputs, "q", dtype), k = stored_input<T>(inputs, "k", dtype),
                       v = stored_input<T>(inputs, "v", dtype);

  ConformanceOutputs out;
  std::vector<T> prefill(q.storage.size());
  softmax_prefill(bh, length, dim, q.storage.data(), k.storage.data(), v.storage.data(), prefill.data());
  out.prefill_out = storage_array(shape, prefill);

  // Decode: token t is appended to the cache at position t and attends over positions 0..t. The
  // split of the context is planned per step, as the harness plans it for a context of t + 1.
  const int threads = omp_get_max_threads();
  std::vector<T> k_cache(q.storage.size()), v_cache(q.storage.size());
  std::vector<float> workspace(plan_softmax_decode(bh, dim, length, length, threads).workspace_floats());
  out.decode_out = storage_array(
      shape, decode_token_by_token(q.storage, k.storage, v.storage, bh, length, dim, dim,
                                   [&](std::int64_t t, const T* q_t, const T* k_t, const T* v_t, T* o_t) {
                                     const SoftmaxDecodePlan plan = plan_softmax_decode(bh, dim, length, t + 1, threads);
                                     softmax_decode_step(plan, q_t, k_t, v_t, k_cache.data(), v_cache.data(), t,
                                                         workspace.data(), o_t);
                                   }));

  std::vector<double> reference(q.values.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const MatrixD o =
        softmax_attention_reference(slice_matrix(q.values, h, length, dim), slice_matrix(k.values, h, length, dim),
                                    slice_matrix(v.values, h, length, dim));
    std::copy(o.data.begin(), o.data.end(), reference.begin() + h * length * dim);
  }
  out.reference_out = make_array(shape, reference, NpyDtype::float64);

  // The explicit history the decode steps built: the rounded k and v, as the kernel stored them.
  out.states.push_back({"k_cache", storage_array(shape, k_cache), std::nullopt, std::nullopt});
  out.states.push_back({"v_cache", storage_array(shape, v_cache), std::nullopt, std::nullopt});
  return out;
}

class SoftmaxKvConformance final : public ConformanceAdapter {
 public:
  ConformanceSpec spec(const MechanismOptions& options) const override {
    require_declared_options(options, "softmax_kv");
    ConformanceSpec spec;
    spec.inputs = {{"q", kAxes, "queries"}, {"k", kAxes, "keys"}, {"v", kAxes, "values"}};
    spec.outputs = standard_outputs(kAxes, "o_t = sum_{i<=t} softmax_i(q_t.k_i / sqrt(dim)) v_i");
    spec.outputs.push_back({"k_cache", kAxes, NpyDtype::float32, "the K cache after the last decode step"});
    spec.outputs.push_back({"v_cache", kAxes, NpyDtype::float32, "the V cache after the last decode step"});
    spec.notes = "dim is at most 256.";
    return spec;
  }

  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const override {
    spec(options);
    require_axis_at_most(inputs, "dim", kMaxDim, "softmax_kv");
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype) : run_typed<float>(inputs, dtype);
  }

  std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                           std::uint64_t seed, DType dtype) const override {
    spec(options);
    return generate_attention_inputs(shape, options, seed, dtype);
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
