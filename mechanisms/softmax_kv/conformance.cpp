// softmax_kv on inputs from .npy files (`arch-bench conformance`): the tiled prefill, the decode
// step token by token into an empty K/V cache, and the fp64 reference.
#include <omp.h>

#include "mechanisms/common/inputs.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "runner/conformance/adapters.hpp"
#include "runner/core/errors.hpp"

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
  const std::vector<float> q = to_storage_values(inputs.at("q"), dtype);
  const std::vector<float> k = to_storage_values(inputs.at("k"), dtype);
  const std::vector<float> v = to_storage_values(inputs.at("v"), dtype);
  const std::vector<T> qs = to_storage<T>(q), ks = to_storage<T>(k), vs = to_storage<T>(v);

  ConformanceOutputs out;
  std::vector<T> prefill(qs.size());
  softmax_prefill(bh, length, dim, qs.data(), ks.data(), vs.data(), prefill.data());
  out.prefill_out = storage_array(shape, prefill);

  // Decode: token t is appended to the cache at position t and attends over positions 0..t. The
  // split of the context is planned per step, as the harness plans it for a context of t + 1.
  const int threads = omp_get_max_threads();
  std::vector<T> k_cache(qs.size()), v_cache(qs.size()), decode(qs.size());
  std::vector<T> q_t(bh * dim), k_t(bh * dim), v_t(bh * dim), o_t(bh * dim);
  std::vector<float> workspace(plan_softmax_decode(bh, dim, length, length, threads).workspace_floats());
  for (std::int64_t t = 0; t < length; ++t) {
    gather_token(qs.data(), bh, length, dim, t, q_t.data());
    gather_token(ks.data(), bh, length, dim, t, k_t.data());
    gather_token(vs.data(), bh, length, dim, t, v_t.data());
    const SoftmaxDecodePlan plan = plan_softmax_decode(bh, dim, length, t + 1, threads);
    softmax_decode_step(plan, q_t.data(), k_t.data(), v_t.data(), k_cache.data(), v_cache.data(), t,
                        workspace.data(), o_t.data());
    scatter_token(o_t.data(), bh, length, dim, t, decode.data());
  }
  out.decode_out = storage_array(shape, decode);

  std::vector<double> reference(q.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const MatrixD o = softmax_attention_reference(slice_matrix(q, h, length, dim), slice_matrix(k, h, length, dim),
                                                  slice_matrix(v, h, length, dim));
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
    if (!options.feature_map.empty()) throw UsageError("softmax_kv takes no --feature-map");
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
};

}  // namespace

const ConformanceAdapter& softmax_kv_conformance() {
  static const SoftmaxKvConformance adapter;
  return adapter;
}

}  // namespace arch_bench
