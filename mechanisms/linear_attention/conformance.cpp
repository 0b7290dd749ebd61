// linear_attention on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the
// decode step token by token from an empty (S, z), and the fp64 recurrent reference.
#include <fmt/format.h>

#include "mechanisms/common/feature_maps.hpp"
#include "mechanisms/linear_attention/cpu.hpp"
#include "mechanisms/linear_attention/reference.hpp"
#include "mechanisms/linear_attention/conformance.hpp"
#include "core/errors.hpp"
#include "mechanisms/linear_attention/options.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = 256;  // as LinearAttention::unsupported()

const std::vector<std::string> kQkAxes = {"batch", "heads", "length", "dim"};
const std::vector<std::string> kVAxes = {"batch", "heads", "length", "dv"};

FeatureMap feature_map_of(const MechanismOptions& options) {
  require_declared_options(options, "linear_attention");
  const OptionSpec& spec = linear_attention_feature_map_option();
  if (const OptionValue* value = options.find(spec.key)) spec.check(*value);
  return *parse_feature_map(spec.text(options));
}

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, FeatureMap map) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const std::int64_t dk = inputs.axis("dim"), dv = inputs.axis("dv");
  const LinearAttentionShape shape{batch * heads, dk, dv, map};
  const std::int64_t bh = shape.batch_heads;
  const std::vector<std::int64_t> out_shape = {batch, heads, length, dv};
  const StoredInput<T> q = stored_input<T>(inputs, "q", dtype), k = stored_input<T>(inputs, "k", dtype),
                       v = stored_input<T>(inputs, "v", dtype);

  ConformanceOutputs out;
  std::vector<float> state(bh * dk * dv, 0.0f), normalizer(bh * dk, 0.0f);
  std::vector<T> prefill(v.storage.size());
  linear_attention_prefill_chunkwise(shape, length, q.storage.data(), k.storage.data(), v.storage.data(),
                                     state.data(), normalizer.data(), prefill.data());
  out.prefill_out = storage_array(out_shape, prefill);

  std::vector<float> decode_state(state.size(), 0.0f), decode_normalizer(normalizer.size(), 0.0f);
  out.decode_out = storage_array(
      out_shape, decode_token_by_token(q.storage, k.storage, v.storage, bh, length, dk, dv,
                                       [&](std::int64_t, const T* q_t, const T* k_t, const T* v_t, T* o_t) {
                                         linear_attention_decode_step(shape, q_t, k_t, v_t, decode_state.data(),
                                                                      decode_normalizer.data(), o_t);
                                       }));

  std::vector<double> reference(v.values.size()), reference_state(state.size()),
      reference_normalizer(normalizer.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const LinearAttentionResult r =
        linear_attention_scan(slice_matrix(q.values, h, length, dk), slice_matrix(k.values, h, length, dk),
                              slice_matrix(v.values, h, length, dv), map);
    std::copy(r.outputs.data.begin(), r.outputs.data.end(), reference.begin() + h * length * dv);
    std::copy(r.state.data.begin(), r.state.data.end(), reference_state.begin() + h * dk * dv);
    std::copy(r.normalizer.begin(), r.normalizer.end(), reference_normalizer.begin() + h * dk);
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);

  const std::vector<std::int64_t> state_shape = {batch, heads, dk, dv}, normalizer_shape = {batch, heads, dk};
  out.states.push_back(kernel_state("final_state", state_shape, state, decode_state, reference_state));
  out.states.push_back(
      kernel_state("final_normalizer", normalizer_shape, normalizer, decode_normalizer, reference_normalizer));
  out.options.set(linear_attention_feature_map_option().key, feature_map_name(map));
  out.options_json = {{"feature_map", feature_map_name(map)}};
  return out;
}

class LinearAttentionConformance final : public ConformanceAdapter {
 public:
  ConformanceSpec spec(const MechanismOptions& options) const override {
    feature_map_of(options);
    const std::vector<std::string> state_axes = {"batch", "heads", "dim", "dv"};
    ConformanceSpec spec;
    spec.inputs = {{"q", kQkAxes, "queries"}, {"k", kQkAxes, "keys"}, {"v", kVAxes, "values"}};
    spec.outputs = standard_outputs(kVAxes, "o_t = phi(q_t)^T S_t / (phi(q_t)^T z_t)");
    add_state_outputs(spec.outputs, "final_state", state_axes,
                      "S = sum_t phi(k_t) v_t^T after the last token, fp32 (from the prefill)",
                      "S from the fp64 reference");
    add_state_outputs(spec.outputs, "final_normalizer", {"batch", "heads", "dim"},
                      "z = sum_t phi(k_t) after the last token, fp32 (from the prefill)", "z from the fp64 reference");
    spec.options = "`--feature-map elu` (phi = elu+1, the default) or `relu` (phi = relu+1).";
    spec.notes = "dim and dv are at most 256; S_t and z_t include token t (causal, inclusive).";
    return spec;
  }

  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const override {
    const FeatureMap map = feature_map_of(options);
    require_axis_at_most(inputs, "dim", kMaxDim, "linear_attention");
    require_axis_at_most(inputs, "dv", kMaxDim, "linear_attention");
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype, map) : run_typed<float>(inputs, dtype, map);
  }

  std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                           std::uint64_t seed, DType dtype) const override {
    feature_map_of(options);
    return generate_attention_inputs(shape, options, seed, dtype);
  }
#if ARCH_BENCH_HAVE_CUDA
  CudaConformanceRun cuda_kernels() const override { return linear_attention_conformance_on_cuda; }
#endif
};

}  // namespace

const ConformanceAdapter& linear_attention_conformance() {
  static const LinearAttentionConformance adapter;
  return adapter;
}

}  // namespace arch_bench
