// retnet on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the decode step
// token by token from S = 0, and the fp64 recurrent reference. Head h of the files decays by
// gamma_h = 1 - 2^(-5-h), as in a run.
#include <fmt/format.h>

#include "mechanisms/retnet/cpu.hpp"
#include "mechanisms/retnet/reference.hpp"
#include "mechanisms/retnet/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

const std::vector<std::string> kQkAxes = {"batch", "heads", "length", "dim"};
const std::vector<std::string> kVAxes = {"batch", "heads", "length", "dv"};

void check_options(const MechanismOptions& options) { require_declared_options(options, "retnet"); }

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const std::int64_t dk = inputs.axis("dim"), dv = inputs.axis("dv");
  const RetNetShape shape{batch * heads, heads, dk, dv};
  const std::int64_t bh = shape.batch_heads;
  std::vector<double> gamma(static_cast<std::size_t>(heads));
  for (std::int64_t h = 0; h < heads; ++h) gamma[h] = retnet_gamma(h);
  const std::vector<std::int64_t> out_shape = {batch, heads, length, dv};
  const StoredInput<T> q = stored_input<T>(inputs, "q", dtype), k = stored_input<T>(inputs, "k", dtype),
                       v = stored_input<T>(inputs, "v", dtype);

  ConformanceOutputs out;
  std::vector<float> state(bh * dk * dv, 0.0f);
  std::vector<T> prefill(v.storage.size());
  retnet_prefill_chunkwise(shape, gamma.data(), length, q.storage.data(), k.storage.data(), v.storage.data(),
                           state.data(), prefill.data());
  out.prefill_out = storage_array(out_shape, prefill);

  std::vector<float> decode_state(state.size(), 0.0f);
  out.decode_out = storage_array(
      out_shape, decode_token_by_token(q.storage, k.storage, v.storage, bh, length, dk, dv,
                                       [&](std::int64_t, const T* q_t, const T* k_t, const T* v_t, T* o_t) {
                                         retnet_decode_step(shape, gamma.data(), q_t, k_t, v_t, decode_state.data(),
                                                            o_t);
                                       }));

  std::vector<double> reference(v.values.size()), reference_state(state.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const RetNetResult r = retnet_scan(slice_matrix(q.values, h, length, dk), slice_matrix(k.values, h, length, dk),
                                       slice_matrix(v.values, h, length, dv), gamma[h % heads]);
    std::copy(r.outputs.data.begin(), r.outputs.data.end(), reference.begin() + h * length * dv);
    std::copy(r.state.data.begin(), r.state.data.end(), reference_state.begin() + h * dk * dv);
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);

  const std::vector<std::int64_t> state_shape = {batch, heads, dk, dv};
  out.states.push_back(kernel_state("final_state", state_shape, state, decode_state, reference_state));
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
    add_state_outputs(spec.outputs, "final_state", state_axes, "S after the last token, fp32 (from the prefill)",
                      "S from the fp64 reference");
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
#if ARCH_BENCH_HAVE_CUDA
  CudaConformanceRun cuda_kernels() const override { return retnet_conformance_on_cuda; }
#endif
};

}  // namespace

const ConformanceAdapter& retnet_conformance() {
  static const RetNetConformance adapter;
  return adapter;
}

}  // namespace arch_bench
