#pragma once
// The run every q/k/v mechanism with a matrix state S [dim, dv] per head reports to `arch-bench
// conformance` (retnet, gated_deltanet, linear_attention): its prefill over the files' sequence, its
// decode step token by token, both from S = 0, and its fp64 reference head by head, with the final
// S of all three. A mechanism brings its kernels, its reference and any state beside S.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mechanisms/common/conformance_adapter.hpp"
#include "mechanisms/common/qkv_file_axes.hpp"

namespace arch_bench {

// q, k and v as the files hold them (qkv_file_axes.hpp), with what each is.
inline std::vector<ConformanceInputSpec> qkv_input_specs(const std::string& q_meaning = "queries",
                                                         const std::string& k_meaning = "keys") {
  return {{"q", kQueryKeyAxes, q_meaning}, {"k", kQueryKeyAxes, k_meaning}, {"v", kValueAxes, "values"}};
}

// The layout of the run below: `inputs`, the standard outputs (o_t is `output_meaning`) and
// final_state [batch, heads, dim, dv] (the kernels' S is `state_meaning`, beside the reference's).
inline ConformanceSpec matrix_state_spec(std::vector<ConformanceInputSpec> inputs, const std::string& output_meaning,
                                         const std::string& state_meaning) {
  ConformanceSpec spec;
  spec.inputs = std::move(inputs);
  spec.outputs = standard_outputs(kValueAxes, output_meaning);
  add_state_outputs(spec.outputs, "final_state", {"batch", "heads", "dim", "dv"}, state_meaning,
                    "S from the fp64 reference");
  return spec;
}

// Fills out's prefill, decode and reference outputs and its "final_state" [batch, heads, dim, dv],
// on the files' q, k, v (qkv_file_axes.hpp):
//   prefill(q, k, v, state, out)            the whole sequence, storage [batch_heads, length, .];
//   step(t, q_t, k_t, v_t, state, o_t)      token t of every head, [batch_heads, .];
//   reference(h, q, k, v) -> result         head h's fp64 run on its [length, .] matrices, whose
//                                           .outputs [length, dv] and .state [dim, dv] are kept;
//                                           called in parallel over the heads.
template <class T, class Prefill, class Step, class Reference>
void run_matrix_state_conformance(const ConformanceInputs& inputs, DType dtype, Prefill prefill, Step step,
                                  Reference reference, ConformanceOutputs& out) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const std::int64_t dk = inputs.axis("dim"), dv = inputs.axis("dv"), bh = batch * heads;
  const std::vector<std::int64_t> out_shape = {batch, heads, length, dv};
  const StoredInput<T> q = stored_input<T>(inputs, "q", dtype), k = stored_input<T>(inputs, "k", dtype),
                       v = stored_input<T>(inputs, "v", dtype);

  std::vector<float> state(bh * dk * dv, 0.0f);
  std::vector<T> prefill_out(v.storage.size());
  prefill(q.storage.data(), k.storage.data(), v.storage.data(), state.data(), prefill_out.data());
  out.prefill_out = storage_array(out_shape, prefill_out);

  std::vector<float> decode_state(state.size(), 0.0f);
  out.decode_out = storage_array(
      out_shape, decode_token_by_token(q.storage, k.storage, v.storage, bh, length, dk, dv,
                                       [&](std::int64_t t, const T* q_t, const T* k_t, const T* v_t, T* o_t) {
                                         step(t, q_t, k_t, v_t, decode_state.data(), o_t);
                                       }));

  std::vector<double> reference_out(v.values.size()), reference_state(state.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const auto r = reference(h, slice_matrix(q.values, h, length, dk), slice_matrix(k.values, h, length, dk),
                             slice_matrix(v.values, h, length, dv));
    std::copy(r.outputs.data.begin(), r.outputs.data.end(), reference_out.begin() + h * length * dv);
    std::copy(r.state.data.begin(), r.state.data.end(), reference_state.begin() + h * dk * dv);
  }
  out.reference_out = make_array(out_shape, reference_out, NpyDtype::float64);

  const std::vector<std::int64_t> state_shape = {batch, heads, dk, dv};
  out.states.push_back(kernel_state("final_state", state_shape, state, decode_state, reference_state));
}

}  // namespace arch_bench
