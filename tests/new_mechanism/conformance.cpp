// causal_mean on inputs from .npy files (`arch-bench conformance`): the prefill, the decode step token
// by token from an empty state, and the fp64 reference, on v [batch, heads, length, dim].
#include <string>
#include <vector>

#include "mechanisms/causal_mean/causal_mean.hpp"

namespace arch_bench {

namespace {

const std::vector<std::string> kAxes = {"batch", "heads", "length", "dim"};

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const std::int64_t dim = inputs.axis("dim"), rows = batch * heads, power = causal_mean_power(options);
  const std::vector<std::int64_t> shape = {batch, heads, length, dim};
  const StoredInput<T> v = stored_input<T>(inputs, "v", dtype);

  ConformanceOutputs out;
  std::vector<float> state(static_cast<std::size_t>(rows * dim), 0.0f);
  float weight = 0;
  std::vector<T> prefill(v.storage.size());
  causal_mean_prefill(rows, length, dim, power, v.storage.data(), state.data(), &weight, prefill.data());
  out.prefill_out = storage_array(shape, prefill);

  std::vector<float> decode_state(state.size(), 0.0f), next(state.size());
  float decode_weight = 0;
  std::vector<T> decode(v.storage.size()), v_t(static_cast<std::size_t>(rows * dim)), o_t(v_t.size());
  for (std::int64_t t = 0; t < length; ++t) {
    gather_token(v.storage.data(), rows, length, dim, t, v_t.data());
    causal_mean_decode_step(rows, dim, t, power, decode_state.data(), decode_weight, v_t.data(), next.data(),
                            &decode_weight, o_t.data());
    decode_state.swap(next);
    scatter_token(o_t.data(), rows, length, dim, t, decode.data());
  }
  out.decode_out = storage_array(shape, decode);

  std::vector<double> reference(v.values.size()), reference_state(state.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const CausalMeanReference ref = causal_mean_reference(slice_matrix(v.values, r, length, dim), power);
    std::copy(ref.outputs.data.begin(), ref.outputs.data.end(), reference.begin() + r * length * dim);
    std::copy(ref.state.begin(), ref.state.end(), reference_state.begin() + r * dim);
  }
  out.reference_out = make_array(shape, reference, NpyDtype::float64);
  out.states.push_back(kernel_state("final_sum", {batch, heads, dim}, state, decode_state, reference_state));
  out.options = options;
  return out;
}

class CausalMeanConformance final : public ConformanceAdapter {
 public:
  ConformanceSpec spec(const MechanismOptions&) const override {
    ConformanceSpec spec;
    spec.inputs = {{"v", kAxes, "values"}};
    spec.outputs = standard_outputs(kAxes, "o_t = sum_{i<=t} w_i v_i / sum_{i<=t} w_i, w_i = (i + 1)^p");
    add_state_outputs(spec.outputs, "final_sum", {"batch", "heads", "dim"},
                      "S = sum_i w_i v_i after the last token, fp32 (from the prefill)", "S from the fp64 reference");
    spec.options = "mean_power (p, default 0)";
    spec.notes = "The new-mechanism template (tests/new_mechanism/): a causal weighted mean of the values.";
    return spec;
  }

  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const override {
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype, options) : run_typed<float>(inputs, dtype, options);
  }
};

}  // namespace

const ConformanceAdapter& causal_mean_conformance() {
  static const CausalMeanConformance adapter;
  return adapter;
}

}  // namespace arch_bench
