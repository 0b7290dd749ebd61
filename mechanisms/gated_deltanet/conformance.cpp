// gated_deltanet on inputs from .npy files (`arch-bench conformance`): the chunkwise (WY/UT) prefill,
// the decode step token by token from S = 0, and the fp64 sequential reference.
#include <fmt/format.h>

#include "mechanisms/gated_deltanet/cpu.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#include "mechanisms/gated_deltanet/reference.hpp"
#include "mechanisms/gated_deltanet/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

const std::vector<std::string> kQkAxes = {"batch", "heads", "length", "dim"};
const std::vector<std::string> kVAxes = {"batch", "heads", "length", "dv"};
const std::vector<std::string> kGateAxes = {"batch", "heads", "length"};

void check_options(const MechanismOptions& options) { require_declared_options(options, "gated_deltanet"); }

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, const std::vector<float>& g,
                             const std::vector<float>& beta) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const std::int64_t dk = inputs.axis("dim"), dv = inputs.axis("dv");
  const GatedDeltaNetShape shape{batch * heads, dk, dv};
  const std::int64_t bh = shape.batch_heads;
  const std::vector<std::int64_t> out_shape = {batch, heads, length, dv};
  const StoredInput<T> q = stored_input<T>(inputs, "q", dtype), k = stored_input<T>(inputs, "k", dtype),
                       v = stored_input<T>(inputs, "v", dtype);

  ConformanceOutputs out;
  std::vector<float> state(bh * dk * dv, 0.0f);
  std::vector<T> prefill(v.storage.size());
  gated_deltanet_prefill_chunkwise(shape, length, q.storage.data(), k.storage.data(), v.storage.data(), g.data(),
                                   beta.data(), state.data(), prefill.data());
  out.prefill_out = storage_array(out_shape, prefill);

  std::vector<float> decode_state(state.size(), 0.0f), g_t(bh), beta_t(bh);
  out.decode_out = storage_array(
      out_shape, decode_token_by_token(q.storage, k.storage, v.storage, bh, length, dk, dv,
                                       [&](std::int64_t t, const T* q_t, const T* k_t, const T* v_t, T* o_t) {
                                         gather_token(g.data(), bh, length, 1, t, g_t.data());
                                         gather_token(beta.data(), bh, length, 1, t, beta_t.data());
                                         gated_deltanet_decode_step(shape, q_t, k_t, v_t, g_t.data(), beta_t.data(),
                                                                    decode_state.data(), o_t);
                                       }));

  std::vector<double> reference(v.values.size()), reference_state(state.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const std::vector<double> gh(g.begin() + h * length, g.begin() + (h + 1) * length);
    const std::vector<double> betah(beta.begin() + h * length, beta.begin() + (h + 1) * length);
    const GatedDeltaNetResult r =
        gated_deltanet_scan(slice_matrix(q.values, h, length, dk), slice_matrix(k.values, h, length, dk),
                            slice_matrix(v.values, h, length, dv), gh, betah);
    std::copy(r.outputs.data.begin(), r.outputs.data.end(), reference.begin() + h * length * dv);
    std::copy(r.state.data.begin(), r.state.data.end(), reference_state.begin() + h * dk * dv);
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);

  const std::vector<std::int64_t> state_shape = {batch, heads, dk, dv};
  out.states.push_back(kernel_state("final_state", state_shape, state, decode_state, reference_state));
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
    add_state_outputs(spec.outputs, "final_state", state_axes, "S after the last token, fp32 (from the prefill)",
                      "S from the fp64 reference");
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
#if ARCH_BENCH_HAVE_CUDA
  CudaConformanceRun cuda_kernels() const override { return gated_deltanet_conformance_on_cuda; }
#endif
};

}  // namespace

const ConformanceAdapter& gated_deltanet_conformance() {
  static const GatedDeltaNetConformance adapter;
  return adapter;
}

}  // namespace arch_bench
