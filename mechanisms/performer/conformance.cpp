// performer on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the decode
// step token by token from an empty (S, z, M), and the fp64 recurrent reference, all with the
// projection W read from w.npy (in a run W comes from the seed; here the user supplies it).
#include <omp.h>

#include <fmt/format.h>

#include "mechanisms/common/qkv_file_axes.hpp"
#include "mechanisms/performer/cpu.hpp"
#include "mechanisms/performer/reference.hpp"
#include "mechanisms/performer/conformance.hpp"
#include "core/errors.hpp"
#include "mechanisms/performer/options.hpp"

namespace arch_bench {

namespace {

// The feature kind of options the adapter has checked (PerformerConformance::check_options).
PerformerFeatures features_of(const MechanismOptions& options) {
  return *parse_performer_features(performer_feature_map_option().text(options));
}

PerformerStabilizer stabilizer_of(const MechanismOptions& options, PerformerFeatures kind) {
  const auto stabilizer = parse_performer_stabilizer(favor_stabilizer_option().text(options));
  if (!stabilizer) {
    throw UsageError(fmt::format("--favor-stabilizer {}: performer takes causal (the default) or published",
                                 favor_stabilizer_option().text(options)));
  }
  if (*stabilizer == PerformerStabilizer::published && kind == PerformerFeatures::trig) {
    throw UsageError("--favor-stabilizer published applies to favor+ features; trig features have no eps to place");
  }
  return *stabilizer;
}

// W's rows: one per feature for favor+, one per sin/cos pair for trig.
std::string w_rows_axis(PerformerFeatures kind) { return kind == PerformerFeatures::trig ? "m/2" : "m"; }

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, PerformerFeatures kind,
                             PerformerStabilizer stabilizer) {
  const std::int64_t batch = inputs.axis("batch"), heads = inputs.axis("heads"), length = inputs.axis("length");
  const std::int64_t dk = inputs.axis("dim"), dv = inputs.axis("dv");
  const std::int64_t rows = inputs.axis(w_rows_axis(kind));
  const std::int64_t m = kind == PerformerFeatures::trig ? 2 * rows : rows;
  const PerformerShape shape{batch * heads, dk, dv, m, kind, stabilizer};
  const std::int64_t bh = shape.batch_heads;
  const std::vector<std::int64_t> out_shape = {batch, heads, length, dv};
  const StoredInput<T> q = stored_input<T>(inputs, "q", dtype), k = stored_input<T>(inputs, "k", dtype),
                       v = stored_input<T>(inputs, "v", dtype);
  // W in fp32 (what the kernels store), widened back for the reference: both use the same values.
  const std::vector<float> w = to_fp32_values(inputs.at("w"));
  const MatrixD projection = slice_matrix(w, 0, rows, dk);
  std::vector<float> packed(performer_projection_floats(shape));
  pack_performer_projection(projection, packed.data());

  ConformanceOutputs out;
  const int threads = omp_get_max_threads();
  std::vector<float> state(bh * m * dv), normalizer(bh * m), running_max(bh);
  std::vector<float> value_sum(performer_value_sum_floats(shape)), decode_value_sum(value_sum.size());
  std::vector<float> workspace(performer_prefill_workspace_floats(shape, threads));
  std::vector<T> prefill(v.storage.size());
  performer_reset_state(shape, state.data(), normalizer.data(), running_max.data(), value_sum.data());
  const std::int64_t prefill_nonpositive =
      performer_prefill_chunkwise(shape, length, packed.data(), q.storage.data(), k.storage.data(), v.storage.data(), state.data(),
                                  normalizer.data(), running_max.data(), workspace.data(), threads, prefill.data(),
                                  value_sum.data());
  out.prefill_out = storage_array(out_shape, prefill);

  std::vector<float> decode_state(state.size()), decode_normalizer(normalizer.size()), decode_max(bh);
  performer_reset_state(shape, decode_state.data(), decode_normalizer.data(), decode_max.data(),
                        decode_value_sum.data());
  // Published: the prefill normalises every row with the key max of the whole sequence. The decode
  // loop starts from an empty state whose M is preset to that maximum, so that its rows are the
  // prefill's (a decoder without the look-ahead, `arch-bench run --phase decode`, uses the max of
  // the keys so far instead: the published prefill over the prefix, at its last row).
  if (shape.published()) performer_key_max(shape, length, packed.data(), k.storage.data(), decode_max.data());
  std::int64_t decode_nonpositive = 0;
  out.decode_out = storage_array(
      out_shape, decode_token_by_token(q.storage, k.storage, v.storage, bh, length, dk, dv,
                                       [&](std::int64_t, const T* q_t, const T* k_t, const T* v_t, T* o_t) {
                                         decode_nonpositive += performer_decode_step(
                                             shape, packed.data(), q_t, k_t, v_t, decode_state.data(),
                                             decode_normalizer.data(), decode_max.data(), o_t,
                                             decode_value_sum.data());
                                       }));

  std::vector<double> reference(v.values.size()), reference_state(state.size()), reference_normalizer(normalizer.size()),
      reference_max(bh);
  std::int64_t reference_nonpositive = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : reference_nonpositive)
  for (std::int64_t h = 0; h < bh; ++h) {
    const PerformerResult r =
        performer_scan(slice_matrix(q.values, h, length, dk), slice_matrix(k.values, h, length, dk),
                       slice_matrix(v.values, h, length, dv), projection, kind, m, stabilizer);
    std::copy(r.outputs.data.begin(), r.outputs.data.end(), reference.begin() + h * length * dv);
    std::copy(r.state.data.begin(), r.state.data.end(), reference_state.begin() + h * m * dv);
    std::copy(r.normalizer.begin(), r.normalizer.end(), reference_normalizer.begin() + h * m);
    reference_max[h] = r.running_max;
    reference_nonpositive += r.nonpositive_denominators;
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);

  const std::vector<std::int64_t> state_shape = {batch, heads, m, dv}, normalizer_shape = {batch, heads, m};
  const std::vector<std::int64_t> max_shape = {batch, heads};
  out.states.push_back(kernel_state("final_state", state_shape, state, decode_state, reference_state));
  out.states.push_back(
      kernel_state("final_normalizer", normalizer_shape, normalizer, decode_normalizer, reference_normalizer));
  out.states.push_back(kernel_state("final_running_max", max_shape, running_max, decode_max, reference_max));
  out.options.set(performer_feature_map_option().key, performer_features_name(kind));
  out.options.set(performer_features_option().key, m);
  out.options.set(favor_stabilizer_option().key, performer_stabilizer_name(stabilizer));
  out.options_json = {{"feature_map", performer_features_name(kind)},
                      {"features", m},
                      {"favor_stabilizer", performer_stabilizer_name(stabilizer)}};
  // Rows whose normaliser phi(q).z was <= 0 or not finite (trig features only can give one).
  out.details = {{"nonpositive_denominators",
                  {{"prefill", prefill_nonpositive}, {"decode", decode_nonpositive}, {"reference", reference_nonpositive}}}};
  return out;
}

class PerformerConformance final : public MechanismConformance {
 public:
  PerformerConformance()
      : MechanismConformance({"performer", kPerformerMaxDim, ARCH_BENCH_CUDA_ONLY(performer_conformance_on_cuda)}) {}

 private:
  void check_options(const MechanismOptions& options) const override {
    MechanismConformance::check_options(options);
    for (const OptionSpec& spec : performer_option_specs()) {
      if (const OptionValue* value = options.find(spec.key)) spec.check(*value);
    }
  }

  ConformanceSpec describe(const MechanismOptions& options) const override {
    const PerformerFeatures kind = features_of(options);
    stabilizer_of(options, kind);  // refuses an unknown one (or published with trig) before any file is read
    const std::vector<std::string> state_axes = {"batch", "heads", "m", "dv"};
    ConformanceSpec spec;
    spec.inputs = {{"q", kQueryKeyAxes, "queries"},
                   {"k", kQueryKeyAxes, "keys"},
                   {"v", kValueAxes, "values"},
                   {"w", {w_rows_axis(kind), "dim"},
                    kind == PerformerFeatures::trig
                        ? "projection W: row i gives the features sin(w_i.x~) and cos(w_i.x~), x~ = x dim^(-1/4)"
                        : "projection W: feature i is exp(w_i.x~ - |x~|^2/2), x~ = x dim^(-1/4)",
                    /*parameter=*/true}};
    spec.outputs = standard_outputs(kValueAxes, "o_t = phi(q_t)^T S_t / (phi(q_t)^T z_t)");
    add_state_outputs(spec.outputs, "final_state", state_axes,
                      "S after the last token relative to exp(M): sum_t exp(c_t - M) f(k_t) v_t^T, fp32",
                      "S from the fp64 reference");
    add_state_outputs(spec.outputs, "final_normalizer", {"batch", "heads", "m"},
                      "z after the last token relative to exp(M): sum_t exp(c_t - M) f(k_t), fp32",
                      "z from the fp64 reference");
    add_state_outputs(spec.outputs, "final_running_max", {"batch", "heads"},
                      "M = max_t c_t, the largest key log-scale seen, fp32", "M from the fp64 reference");
    spec.options = "`--feature-map favor+` (the default) or `trig`; m is read from w.npy (m rows for favor+, m/2 for "
                   "trig). `--favor-stabilizer causal` (the default) or `published` (favor+ only).";
    spec.notes =
        "Features are stabilised (mechanisms/performer/reference.hpp): phi(x) = exp(c) f(x) with f = m^(-1/2) "
        "[exp(w_i.x~ - |x~|^2/2 - c) + 1e-6], c = max_i (w_i.x~ - |x~|^2/2) for favor+ (f = sqrt(2/m) [sin, cos], "
        "c = |x~|^2/2 for trig). A query's exp(c) cancels; a key's is kept relative to the running max M, so the "
        "absolute state is final_state * exp(final_running_max). Trig denominators phi(q).z can come close to 0 "
        "(or below it: counted in the manifest's details) at unit-scale inputs, which magnifies fp32 rounding past "
        "the tolerance; scale q and k down (`--generate ... --qk-scale 0.3`) to compare trig ports. dim and dv are at most 256, m at most 4096. "
        "With `--favor-stabilizer published` (performer-pytorch's softmax_kernel, google-research's FAVOR+) f = m^(-1/2) "
        "[exp(w_i.x~ - |x~|^2/2 - s) + 1e-6] with s = max_i w_i.q~ for a query and, for keys, s = M = the max of w_i.k~_t "
        "over every key and feature of the sequence; final_state and final_normalizer are then absolute (sum_t f(k_t) v_t^T, "
        "sum_t f(k_t)), final_running_max is M, and the decode loop starts with M preset to the sequence's, so that it "
        "equals the prefill row for row.";
    return spec;
  }

  ConformanceOutputs run_checked(const ConformanceInputs& inputs, DType dtype,
                                 const MechanismOptions& options) const override {
    const PerformerFeatures kind = features_of(options);
    require_axis_at_most(inputs, w_rows_axis(kind), kind == PerformerFeatures::trig ? kPerformerMaxFeatures / 2
                                                                                    : kPerformerMaxFeatures,
                         "performer");
    const PerformerStabilizer stabilizer = stabilizer_of(options, kind);
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype, kind, stabilizer)
                                    : run_typed<float>(inputs, dtype, kind, stabilizer);
  }

  // q, k, v as `arch-bench run --seed` draws them, and the W a run with that seed uses.
  std::map<std::string, NpyArray> draw(const ConformanceShape& shape, const MechanismOptions& options,
                                       std::uint64_t seed, DType dtype) const override {
    const PerformerFeatures kind = features_of(options);
    const std::int64_t m = performer_features_option().integer(options);
    if (m < 1 || m > kPerformerMaxFeatures) {
      throw UsageError(fmt::format("--features {}: performer takes m from 1 to {}", m, kPerformerMaxFeatures));
    }
    if (kind == PerformerFeatures::trig && m % 2 != 0) {
      throw UsageError(fmt::format("--features {}: trig features come in sin/cos pairs, m must be even", m));
    }
    std::map<std::string, NpyArray> tensors = generate_attention_inputs(shape, options, seed, dtype);
    const MatrixD w = performer_projection(kind, m, shape.dim, seed);
    tensors.emplace("w", make_array({w.rows, w.cols}, w.data, NpyDtype::float32));
    return tensors;
  }
};

}  // namespace

const ConformanceAdapter& performer_conformance() { return adapter_instance<PerformerConformance>(); }

}  // namespace arch_bench
