// gated_deltanet on inputs from .npy files (`arch-bench conformance`): the chunkwise (WY/UT) prefill,
// the decode step token by token from S = 0, and the fp64 sequential reference.
#include <fmt/format.h>

#include "mechanisms/gated_deltanet/cpu.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#include "mechanisms/gated_deltanet/reference.hpp"
#include "runner/conformance/adapters.hpp"
#include "runner/core/errors.hpp"

namespace arch_bench {

namespace {

const std::vector<std::string> kQkAxes = {"batch", "heads", "length", "dim"};
const std::vector<std::string> kVAxes = {"batch", "heads", "length", "dv"};
const std::vector<std::string> kGateAxes = {"batch", "heads", "length"};

void check_options(const MechanismOptions& options) {
  if (!options.feature_map.empty()) throw UsageError("gated_deltanet takes no --feature-map");
}

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, const std::vector<float>& g,
                             const std::vector<float>& beta) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const std::int64_t dk = inputs.axis("dim"), dv = inputs.axis("dv");
  const GatedDeltaNetShape shape{batch * heads, dk, dv};
  const std::int64_t bh = shape.batch_heads;
  const std::vector<std::int64_t> out_shape = {batch, heads, length, dv};
  const std::vector<float> q = to_storage_values(inputs.at("q"), dtype);
  const std::vector<float> k = to_storage_values(inputs.at("k"), dtype);
  const std::vector<float> v = to_storage_values(inputs.at("v"), dtype);
  const std::vector<T> qs = to_storage<T>(q), ks = to_storage<T>(k), vs = to_storage<T>(v);

  ConformanceOutputs out;
  std::vector<float> state(bh * dk * dv, 0.0f);
  std::vector<T> prefill(vs.size());
  gated_deltanet_prefill_chunkwise(shape, length, qs.data(), ks.data(), vs.data(), g.data(), beta.data(), state.data(),
                                   prefill.data());
  out.prefill_out = storage_array(out_shape, prefill);

  std::vector<float> decode_state(state.size(), 0.0f), g_t(bh), beta_t(bh);
  std::vector<T> decode(vs.size()), q_t(bh * dk), k_t(bh * dk), v_t(bh * dv), o_t(bh * dv);
  for (std::int64_t t = 0; t < length; ++t) {
    gather_token(qs.data(), bh, length, dk, t, q_t.data());
    gather_token(ks.data(), bh, length, dk, t, k_t.data());
    gather_token(vs.data(), bh, length, dv, t, v_t.data());
    gather_token(g.data(), bh, length, 1, t, g_t.data());
    gather_token(beta.data(), bh, length, 1, t, beta_t.data());
    gated_deltanet_decode_step(shape, q_t.data(), k_t.data(), v_t.data(), g_t.data(), beta_t.data(),
                               decode_state.data(), o_t.data());
    scatter_token(o_t.data(), bh, length, dv, t, decode.data());
  }
  out.decode_out = storage_array(out_shape, decode);

  std::vector<double> reference(v.size()), reference_state(state.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const std::vector<double> gh(g.begin() + h * length, g.begin() + (h + 1) * length);
    const std::vector<double> betah(beta.begin() + h * length, beta.begin() + (h + 1) * length);
    const GatedDeltaNetResult r = gated_deltanet_scan(slice_matrix(q, h, length, dk), slice_matrix(k, h, length, dk),
                                                      slice_matrix(v, h, length, dv), gh, betah);
    std::copy(r.outputs.data.begin(), r.outputs.data.end(), reference.begin() + h * length * dv);
    std::copy(r.state.data.begin(), r.state.data.end(), reference_state.begin() + h * dk * dv);
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);

  const std::vector<std::int64_t> state_shape = {batch, heads, dk, dv};
  out.states.push_back({"final_state", make_array(state_shape, state, NpyDtype::float32),
                        make_array(state_shape, decode_state, NpyDtype::float32),
                        make_array(state_shape, reference_state, NpyDtype::float64)});
  out.details = {{"prefill_chunk", kGatedDeltaNetChunk}};
  return out;
}

class GatedDeltaNetConformance final : public ConformanceAdapter {
 public:
  ConformanceSpec spec(const MechanismOptions& options) const override {
    check_options(options);
    const std::vector<std::string> state_axes = {"batch", "heads", "dim", "dv"};
    ConformanceSpec spec;
    spec.inputs = {{"q", kQkAxes, "queries (L2-normalised and scaled by dim^-1/2 inside)"},
                   {"k", kQkAxes, "keys (L2-normalised inside)"},
                   {"v", kVAxes, "values"},
                   {"g", kGateAxes, "log decay g_t <= 0, alpha_t = exp(g_t)", true},
                   {"beta", kGateAxes, "writing strength beta_t, in (0, 1) in a run", true}};
    spec.outputs = standard_outputs(kVAxes, "o_t = S_t^T q_t");
    spec.outputs.push_back({"final_state", state_axes, NpyDtype::float32,
                            "S after the last token, fp32 (from the prefill)"});
    spec.outputs.push_back({"reference_final_state", state_axes, NpyDtype::float64, "S from the fp64 reference"});
    spec.options = "";
    spec.notes = "k_t <- k_t / sqrt(k_t.k_t + 1e-6), q_t <- q_t / sqrt(q_t.q_t + 1e-6) / sqrt(dim); "
                 "S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T from S = 0; o_t = S_t^T q_t "
                 "(S_t includes token t). This is flash-linear-attention's chunk_gated_delta_rule(q, k, v, g, beta, "
                 "use_qk_l2norm_in_kernel=True, output_final_state=True) with the heads axis before the length axis. "
                 "g must be <= 0 (a decay); dim and dv are at most 256.";
    return spec;
  }

  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const override {
    check_options(options);
    require_axis_at_most(inputs, "dim", kGatedDeltaNetMaxDim, "gated_deltanet");
    require_axis_at_most(inputs, "dv", kGatedDeltaNetMaxDim, "gated_deltanet");
    const std::vector<float> g = to_fp32_values(inputs.at("g"));
    const std::vector<float> beta = to_fp32_values(inputs.at("beta"));
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (g[i] > 0.0f) {
        throw UsageError(fmt::format("g.npy: element {} is {} > 0; g is a log decay (alpha = exp(g) <= 1), so every "
                                     "value must be <= 0",
                                     i, g[i]));
      }
    }
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype, g, beta) : run_typed<float>(inputs, dtype, g, beta);
  }

  // q, k, v as every attention-style mechanism draws them, and the gates `arch-bench run --seed`
  // draws for a prefill cell of this shape (mechanisms/gated_deltanet/inputs.hpp).
  std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                           std::uint64_t seed, DType dtype) const override {
    check_options(options);
    std::map<std::string, NpyArray> tensors = generate_attention_inputs(shape, options, seed, dtype);
    const GatedDeltaNetGates gates = make_gated_deltanet_gates(generated_cell(shape, options, dtype), shape.length, seed);
    const std::vector<std::int64_t> gate_shape = {shape.batch, shape.heads, shape.length};
    tensors.emplace("g", make_array(gate_shape, gates.g, NpyDtype::float32));
    tensors.emplace("beta", make_array(gate_shape, gates.beta, NpyDtype::float32));
    return tensors;
  }
};

}  // namespace

const ConformanceAdapter& gated_deltanet_conformance() {
  static const GatedDeltaNetConformance adapter;
  return adapter;
}

}  // namespace arch_bench
