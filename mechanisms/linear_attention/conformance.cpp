// linear_attention on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the
// decode step token by token from an empty (S, z), and the fp64 recurrent reference.
#include <fmt/format.h>

#include "mechanisms/common/feature_maps.hpp"
#include "mechanisms/linear_attention/cpu.hpp"
#include "mechanisms/linear_attention/reference.hpp"
#include "runner/conformance/adapters.hpp"
#include "runner/core/errors.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = 256;  // as LinearAttention::unsupported()

const std::vector<std::string> kQkAxes = {"batch", "heads", "length", "dim"};
const std::vector<std::string> kVAxes = {"batch", "heads", "length", "dv"};

FeatureMap feature_map_of(const MechanismOptions& options) {
  if (options.feature_map.empty()) return FeatureMap::elu_plus_one;
  const auto map = parse_feature_map(options.feature_map);
  if (!map) {
    throw UsageError(fmt::format("--feature-map {}: linear_attention takes elu (elu+1, the default) or relu (relu+1)",
                                 options.feature_map));
  }
  return *map;
}

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, FeatureMap map) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const std::int64_t dk = inputs.axis("dim"), dv = inputs.axis("dv");
  const LinearAttentionShape shape{batch * heads, dk, dv, map};
  const std::int64_t bh = shape.batch_heads;
  const std::vector<std::int64_t> out_shape = {batch, heads, length, dv};
  const std::vector<float> q = to_storage_values(inputs.at("q"), dtype);
  const std::vector<float> k = to_storage_values(inputs.at("k"), dtype);
  const std::vector<float> v = to_storage_values(inputs.at("v"), dtype);
  const std::vector<T> qs = to_storage<T>(q), ks = to_storage<T>(k), vs = to_storage<T>(v);

  ConformanceOutputs out;
  std::vector<float> state(bh * dk * dv, 0.0f), normalizer(bh * dk, 0.0f);
  std::vector<T> prefill(vs.size());
  linear_attention_prefill_chunkwise(shape, length, qs.data(), ks.data(), vs.data(), state.data(), normalizer.data(),
                                     prefill.data());
  out.prefill_out = storage_array(out_shape, prefill);

  std::vector<float> decode_state(state.size(), 0.0f), decode_normalizer(normalizer.size(), 0.0f);
  std::vector<T> decode(vs.size()), q_t(bh * dk), k_t(bh * dk), v_t(bh * dv), o_t(bh * dv);
  for (std::int64_t t = 0; t < length; ++t) {
    gather_token(qs.data(), bh, length, dk, t, q_t.data());
    gather_token(ks.data(), bh, length, dk, t, k_t.data());
    gather_token(vs.data(), bh, length, dv, t, v_t.data());
    linear_attention_decode_step(shape, q_t.data(), k_t.data(), v_t.data(), decode_state.data(),
                                 decode_normalizer.data(), o_t.data());
    scatter_token(o_t.data(), bh, length, dv, t, decode.data());
  }
  out.decode_out = storage_array(out_shape, decode);

  std::vector<double> reference(v.size()), reference_state(state.size()), reference_normalizer(normalizer.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const LinearAttentionResult r = linear_attention_scan(
        slice_matrix(q, h, length, dk), slice_matrix(k, h, length, dk), slice_matrix(v, h, length, dv), map);
    std::copy(r.outputs.data.begin(), r.outputs.data.end(), reference.begin() + h * length * dv);
    std::copy(r.state.data.begin(), r.state.data.end(), reference_state.begin() + h * dk * dv);
    std::copy(r.normalizer.begin(), r.normalizer.end(), reference_normalizer.begin() + h * dk);
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);

  const std::vector<std::int64_t> state_shape = {batch, heads, dk, dv}, normalizer_shape = {batch, heads, dk};
  out.states.push_back({"final_state", make_array(state_shape, state, NpyDtype::float32),
                        make_array(state_shape, decode_state, NpyDtype::float32),
                        make_array(state_shape, reference_state, NpyDtype::float64)});
  out.states.push_back({"final_normalizer", make_array(normalizer_shape, normalizer, NpyDtype::float32),
                        make_array(normalizer_shape, decode_normalizer, NpyDtype::float32),
                        make_array(normalizer_shape, reference_normalizer, NpyDtype::float64)});
  out.options.feature_map = feature_map_name(map);
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
    spec.outputs.push_back({"final_state", state_axes, NpyDtype::float32,
                            "S = sum_t phi(k_t) v_t^T after the last token, fp32 (from the prefill)"});
    spec.outputs.push_back({"reference_final_state", state_axes, NpyDtype::float64, "S from the fp64 reference"});
    spec.outputs.push_back({"final_normalizer", {"batch", "heads", "dim"}, NpyDtype::float32,
                            "z = sum_t phi(k_t) after the last token, fp32 (from the prefill)"});
    spec.outputs.push_back(
        {"reference_final_normalizer", {"batch", "heads", "dim"}, NpyDtype::float64, "z from the fp64 reference"});
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
};

}  // namespace

const ConformanceAdapter& linear_attention_conformance() {
  static const LinearAttentionConformance adapter;
  return adapter;
}

}  // namespace arch_bench
