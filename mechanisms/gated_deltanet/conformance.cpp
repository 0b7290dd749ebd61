// gated_deltanet on inputs from .npy files (`arch-bench conformance`): the chunkwise (WY/UT) prefill,
// the decode step token by token from S = 0, and the fp64 sequential reference.
#include <fmt/format.h>

#include "mechanisms/common/matrix_state_conformance.hpp"
#include "mechanisms/gated_deltanet/cpu.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#include "mechanisms/gated_deltanet/reference.hpp"
#include "mechanisms/gated_deltanet/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

const std::vector<std::string> kGateAxes = {"batch", "heads", "length"};

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, const std::vector<float>& g,
                             const std::vector<float>& beta) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const GatedDeltaNetShape shape{batch * heads, inputs.axis("dim"), inputs.axis("dv")};
  const std::int64_t bh = shape.batch_heads;

  ConformanceOutputs out;
  std::vector<float> g_t(bh), beta_t(bh);
  run_matrix_state_conformance<T>(
      inputs, dtype,
      [&](const T* q, const T* k, const T* v, float* state, T* o) {
        gated_deltanet_prefill_chunkwise(shape, length, q, k, v, g.data(), beta.data(), state, o);
      },
      [&](std::int64_t t, const T* q_t, const T* k_t, const T* v_t, float* state, T* o_t) {
        gather_token(g.data(), bh, length, 1, t, g_t.data());
        gather_token(beta.data(), bh, length, 1, t, beta_t.data());
        gated_deltanet_decode_step(shape, q_t, k_t, v_t, g_t.data(), beta_t.data(), state, o_t);
      },
      [&](std::int64_t h, const MatrixD& q, const MatrixD& k, const MatrixD& v) {
        const std::vector<double> gh(g.begin() + h * length, g.begin() + (h + 1) * length);
        const std::vector<double> betah(beta.begin() + h * length, beta.begin() + (h + 1) * length);
        return gated_deltanet_scan(q, k, v, gh, betah);
      },
      out);
  out.details = {{"prefill_chunk", kGatedDeltaNetChunk}};
  return out;
}

class GatedDeltaNetConformance final : public MechanismConformance {
 public:
  GatedDeltaNetConformance()
      : MechanismConformance(
            {"gated_deltanet", kGatedDeltaNetMaxDim, ARCH_BENCH_CUDA_ONLY(gated_deltanet_conformance_on_cuda)}) {}

 private:
  ConformanceSpec describe(const MechanismOptions&) const override {
    std::vector<ConformanceInputSpec> inputs =
        qkv_input_specs("queries (L2-normalised and scaled by dim^-1/2 inside)", "keys (L2-normalised inside)");
    inputs.push_back({"g", kGateAxes, "log decay g_t <= 0, alpha_t = exp(g_t)", true});
    inputs.push_back({"beta", kGateAxes, "writing strength beta_t, in (0, 1) in a run", true});
    ConformanceSpec spec = matrix_state_spec(std::move(inputs), "o_t = S_t^T q_t",
                                             "S after the last token, fp32 (from the prefill)");
    spec.notes = "k_t <- k_t / sqrt(k_t.k_t + 1e-6), q_t <- q_t / sqrt(q_t.q_t + 1e-6) / sqrt(dim); "
                 "S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T from S = 0; o_t = S_t^T q_t "
                 "(S_t includes token t). This is flash-linear-attention's chunk_gated_delta_rule(q, k, v, g, beta, "
                 "use_qk_l2norm_in_kernel=True, output_final_state=True) with the heads axis before the length axis. "
                 "g must be <= 0 (a decay); dim and dv are at most 256.";
    return spec;
  }

  ConformanceOutputs run_checked(const ConformanceInputs& inputs, DType dtype, const MechanismOptions&) const override {
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
  std::map<std::string, NpyArray> draw(const ConformanceShape& shape, const MechanismOptions& options,
                                       std::uint64_t seed, DType dtype) const override {
    std::map<std::string, NpyArray> tensors = generate_attention_inputs(shape, options, seed, dtype);
    const GatedDeltaNetGates gates = make_gated_deltanet_gates(generated_cell(shape, options, dtype), shape.length, seed);
    const std::vector<std::int64_t> gate_shape = {shape.batch, shape.heads, shape.length};
    tensors.emplace("g", make_array(gate_shape, gates.g, NpyDtype::float32));
    tensors.emplace("beta", make_array(gate_shape, gates.beta, NpyDtype::float32));
    return tensors;
  }
};

}  // namespace

const ConformanceAdapter& gated_deltanet_conformance() { return adapter_instance<GatedDeltaNetConformance>(); }

}  // namespace arch_bench
