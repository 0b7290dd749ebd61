// retnet on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the decode step
// token by token from S = 0, and the fp64 recurrent reference. Head h of the files decays by
// gamma_h = 1 - 2^(-5-h), as in a run.
#include <fmt/format.h>

#include "mechanisms/retnet/cpu.hpp"
#include "mechanisms/retnet/reference.hpp"
#include "runner/conformance/adapters.hpp"
#include "runner/core/errors.hpp"

namespace arch_bench {

namespace {

const std::vector<std::string> kQkAxes = {"batch", "heads", "length", "dim"};
const std::vector<std::string> kVAxes = {"batch", "heads", "length", "dv"};

void check_options(const MechanismOptions& options) {
  if (!options.feature_map.empty()) throw UsageError("retnet takes no --feature-map");
}

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const std::int64_t dk = inputs.axis("dim"), dv = inputs.axis("dv");
  const RetNetShape shape{batch * heads, heads, dk, dv};
  const std::int64_t bh = shape.batch_heads;
  std::vector<double> gamma(static_cast<std::size_t>(heads));
  for (std::int64_t h = 0; h < heads; ++h) gamma[h] = retnet_gamma(h);
  const std::vector<std::int64_t> out_shape = {batch, heads, length, dv};
  const std::vector<float> q = to_storage_values(inputs.at("q"), dtype);
  const std::vector<float> k = to_storage_values(inputs.at("k"), dtype);
  const std::vector<float> v = to_storage_values(inputs.at("v"), dtype);
  const std::vector<T> qs = to_storage<T>(q), ks = to_storage<T>(k), vs = to_storage<T>(v);

  ConformanceOutputs out;
  std::vector<float> state(bh * dk * dv, 0.0f);
  std::vector<T> prefill(vs.size());
  retnet_prefill_chunkwise(shape, gamma.data(), length, qs.data(), ks.data(), vs.data(), state.data(), prefill.data());
  out.prefill_out = storage_array(out_shape, prefill);

  std::vector<float> decode_state(state.size(), 0.0f);
  std::vector<T> decode(vs.size()), q_t(bh * dk), k_t(bh * dk), v_t(bh * dv), o_t(bh * dv);
  for (std::int64_t t = 0; t < length; ++t) {
    gather_token(qs.data(), bh, length, dk, t, q_t.data());
    gather_token(ks.data(), bh, length, dk, t, k_t.data());
    gather_token(vs.data(), bh, length, dv, t, v_t.data());
    retnet_decode_step(shape, gamma.data(), q_t.data(), k_t.data(), v_t.data(), decode_state.data(), o_t.data());
    scatter_token(o_t.data(), bh, length, dv, t, decode.data());
  }
  out.decode_out = storage_array(out_shape, decode);

  std::vector<double> reference(v.size()), reference_state(state.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const RetNetResult r = retnet_scan(slice_matrix(q, h, length, dk), slice_matrix(k, h, length, dk),
                                       slice_matrix(v, h, length, dv), gamma[h % heads]);
    std::copy(r.outputs.data.begin(), r.outputs.data.end(), reference.begin() + h * length * dv);
    std::copy(r.state.data.begin(), r.state.data.end(), reference_state.begin() + h * dk * dv);
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);

  const std::vector<std::int64_t> state_shape = {batch, heads, dk, dv};
  out.states.push_back({"final_state", make_array(state_shape, state, NpyDtype::float32),
                        make_array(state_shape, decode_state, NpyDtype::float32),
                        make_array(state_shape, reference_state, NpyDtype::float64)});
  out.details = {{"gamma", gamma}, {"prefill_chunk", kRetNetChunk}};
  return out;
}

class RetNetConformance final : public ConformanceAdapter {
 public:
  ConformanceSpec spec(const MechanismOptions& options) const override {
    check_options(options);
    const std::vector<std::string> state_axes = {"batch", "heads", "dim", "dv"};
    ConformanceSpec spec;
    spec.inputs = {{"q", kQkAxes, "queries"}, {"k", kQkAxes, "keys"}, {"v", kVAxes, "values"}};
    spec.outputs = standard_outputs(kVAxes, "o_t = q_t^T S_t");
    spec.outputs.push_back({"final_state", state_axes, NpyDtype::float32,
                            "S after the last token, fp32 (from the prefill)"});
    spec.outputs.push_back({"reference_final_state", state_axes, NpyDtype::float64, "S from the fp64 reference"});
    spec.options = "";
    spec.notes = "S_t = gamma_h S_{t-1} + k_t v_t^T from S = 0, o_t = q_t^T S_t (S_t includes token t); head h "
                 "(its index on the heads axis) decays by gamma_h = 1 - 2^(-5-h). No query/key scaling, no "
                 "position rotation (xPos) and no group norm: the bare retention. dim and dv are at most 256.";
    return spec;
  }

  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const override {
    check_options(options);
    require_axis_at_most(inputs, "dim", kRetNetMaxDim, "retnet");
    require_axis_at_most(inputs, "dv", kRetNetMaxDim, "retnet");
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype) : run_typed<float>(inputs, dtype);
  }

  std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                           std::uint64_t seed, DType dtype) const override {
    check_options(options);
    return generate_attention_inputs(shape, options, seed, dtype);
  }
};

}  // namespace

const ConformanceAdapter& retnet_conformance() {
  static const RetNetConformance adapter;
  return adapter;
}

}  // namespace arch_bench
