// linear_attention on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the
// decode step token by token from an empty (S, z), and the fp64 recurrent reference.
#include <fmt/format.h>

#include "mechanisms/common/feature_maps.hpp"
#include "mechanisms/common/matrix_state_conformance.hpp"
#include "mechanisms/linear_attention/cpu.hpp"
#include "mechanisms/linear_attention/reference.hpp"
#include "mechanisms/linear_attention/conformance.hpp"
#include "core/errors.hpp"
#include "mechanisms/linear_attention/options.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = 256;  // as LinearAttention::unsupported()

// The feature map of options the adapter has checked (MechanismConformance::check_options).
FeatureMap feature_map_of(const MechanismOptions& options) {
  return *parse_feature_map(linear_attention_feature_map_option().text(options));
}

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, FeatureMap map) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const std::int64_t dk = inputs.axis("dim");
  const LinearAttentionShape shape{batch * heads, dk, inputs.axis("dv"), map};
  const std::int64_t bh = shape.batch_heads;

  // Beside S, the normaliser z [dim] per head, from z = 0 as well.
  ConformanceOutputs out;
  std::vector<float> normalizer(bh * dk, 0.0f), decode_normalizer(normalizer.size(), 0.0f);
  std::vector<double> reference_normalizer(normalizer.size());
  run_matrix_state_conformance<T>(
      inputs, dtype,
      [&](const T* q, const T* k, const T* v, float* state, T* o) {
        linear_attention_prefill_chunkwise(shape, length, q, k, v, state, normalizer.data(), o);
      },
      [&](std::int64_t, const T* q_t, const T* k_t, const T* v_t, float* state, T* o_t) {
        linear_attention_decode_step(shape, q_t, k_t, v_t, state, decode_normalizer.data(), o_t);
      },
      [&](std::int64_t h, const MatrixD& q, const MatrixD& k, const MatrixD& v) {
        LinearAttentionResult r = linear_attention_scan(q, k, v, map);
        std::copy(r.normalizer.begin(), r.normalizer.end(), reference_normalizer.begin() + h * dk);
        return r;
      },
      out);
  const std::vector<std::int64_t> normalizer_shape = {batch, heads, dk};
  out.states.push_back(
      kernel_state("final_normalizer", normalizer_shape, normalizer, decode_normalizer, reference_normalizer));
  out.options.set(linear_attention_feature_map_option().key, feature_map_name(map));
  out.options_json = {{"feature_map", feature_map_name(map)}};
  return out;
}

class LinearAttentionConformance final : public MechanismConformance {
 public:
  LinearAttentionConformance()
      : MechanismConformance(
            {"linear_attention", kMaxDim, ARCH_BENCH_CUDA_ONLY(linear_attention_conformance_on_cuda)}) {}

 private:
  void check_options(const MechanismOptions& options) const override {
    MechanismConformance::check_options(options);
    const OptionSpec& spec = linear_attention_feature_map_option();
    if (const OptionValue* value = options.find(spec.key)) spec.check(*value);
  }

  ConformanceSpec describe(const MechanismOptions&) const override {
    ConformanceSpec spec = matrix_state_spec(qkv_input_specs(), "o_t = phi(q_t)^T S_t / (phi(q_t)^T z_t)",
                                             "S = sum_t phi(k_t) v_t^T after the last token, fp32 (from the prefill)");
    add_state_outputs(spec.outputs, "final_normalizer", {"batch", "heads", "dim"},
                      "z = sum_t phi(k_t) after the last token, fp32 (from the prefill)", "z from the fp64 reference");
    spec.options = "`--feature-map elu` (phi = elu+1, the default) or `relu` (phi = relu+1).";
    spec.notes = "dim and dv are at most 256; S_t and z_t include token t (causal, inclusive).";
    return spec;
  }

  ConformanceOutputs run_checked(const ConformanceInputs& inputs, DType dtype,
                                 const MechanismOptions& options) const override {
    const FeatureMap map = feature_map_of(options);
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype, map) : run_typed<float>(inputs, dtype, map);
  }
};

}  // namespace

const ConformanceAdapter& linear_attention_conformance() { return adapter_instance<LinearAttentionConformance>(); }

}  // namespace arch_bench
