// retnet on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the decode step
// token by token from S = 0, and the fp64 recurrent reference. Head h of the files decays by
// gamma_h = 1 - 2^(-5-h), as in a run.
#include <fmt/format.h>

#include "mechanisms/common/matrix_state_conformance.hpp"
#include "mechanisms/retnet/cpu.hpp"
#include "mechanisms/retnet/reference.hpp"
#include "mechanisms/retnet/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const RetNetShape shape{batch * heads, heads, inputs.axis("dim"), inputs.axis("dv")};
  std::vector<double> gamma(static_cast<std::size_t>(heads));
  for (std::int64_t h = 0; h < heads; ++h) gamma[h] = retnet_gamma(h);

  ConformanceOutputs out;
  run_matrix_state_conformance<T>(
      inputs, dtype,
      [&](const T* q, const T* k, const T* v, float* state, T* o) {
        retnet_prefill_chunkwise(shape, gamma.data(), length, q, k, v, state, o);
      },
      [&](std::int64_t, const T* q_t, const T* k_t, const T* v_t, float* state, T* o_t) {
        retnet_decode_step(shape, gamma.data(), q_t, k_t, v_t, state, o_t);
      },
      [&](std::int64_t h, const MatrixD& q, const MatrixD& k, const MatrixD& v) {
        return retnet_scan(q, k, v, gamma[h % heads]);
      },
      out);
  out.details = {{"gamma", gamma}, {"prefill_chunk", kRetNetChunk}};
  return out;
}

class RetNetConformance final : public MechanismConformance {
 public:
  RetNetConformance()
      : MechanismConformance({"retnet", kRetNetMaxDim, ARCH_BENCH_CUDA_ONLY(retnet_conformance_on_cuda)}) {}

 private:
  ConformanceSpec describe(const MechanismOptions&) const override {
    ConformanceSpec spec =
        matrix_state_spec(qkv_input_specs(), "o_t = q_t^T S_t", "S after the last token, fp32 (from the prefill)");
    spec.notes = "S_t = gamma_h S_{t-1} + k_t v_t^T from S = 0, o_t = q_t^T S_t (S_t includes token t); head h "
                 "(its index on the heads axis) decays by gamma_h = 1 - 2^(-5-h). No query/key scaling, no "
                 "position rotation (xPos) and no group norm: the bare retention. dim and dv are at most 256.";
    return spec;
  }

  ConformanceOutputs run_checked(const ConformanceInputs& inputs, DType dtype, const MechanismOptions&) const override {
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype) : run_typed<float>(inputs, dtype);
  }
};

}  // namespace

const ConformanceAdapter& retnet_conformance() { return adapter_instance<RetNetConformance>(); }

}  // namespace arch_bench
