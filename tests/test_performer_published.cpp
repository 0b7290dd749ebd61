// Performer's published favor stabiliser (`--favor-stabilizer published`, the eps placement of
// performer-pytorch's softmax_kernel and google-research's FAVOR+): the features follow that
// formula, the kernels (chunkwise, recurrent, decode) agree with the fp64 reference, a decode step
// equals the published prefill over the prefix, and the option reaches the cells, the report and the
// conformance manifest. The cross-check against performer-pytorch itself is scripts/crosscheck.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/performer/cpu.hpp"
#include "mechanisms/performer/reference.hpp"
#include "mechanisms/registry.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "runner/conformance/conformance.hpp"
#include "runner/diff/pair_rows.hpp"
#include "support/cli.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {
namespace fs = std::filesystem;

Cell published_cell(Phase phase, std::int64_t length, std::int64_t features, DType dtype, std::int64_t heads = 2,
                    std::int64_t head_dim = 32) {
  Cell cell = testing::small_cell(heads, head_dim, length, dtype, phase);
  cell.mechanism = "performer";
  cell.options.set("features", static_cast<std::int64_t>(features));
  cell.options.set("feature_map", std::string("favor+"));
  cell.options.set("favor_stabilizer", std::string("published"));
  return cell;
}

// One cell's inputs in storage T (every head of every token), its projection, and the kernels run
// from an empty published state.
template <class T>
struct Published {
  Published(const Cell& cell, std::int64_t tokens_, std::uint64_t seed = 5)
      : tokens(tokens_),
        inputs(make_attention_inputs(cell, tokens_, seed)),
        shape{cell.batch_heads(), cell.head_dim, cell.head_dim, std::get<std::int64_t>(*cell.options.find("features")), PerformerFeatures::favor_plus,
              PerformerStabilizer::published},
        projection(performer_projection(shape.kind, shape.features, shape.dk, seed)),
        packed(static_cast<std::size_t>(performer_projection_floats(shape))) {
    for (float& x : inputs.q) x = round_through<T>(x);
    for (float& x : inputs.k) x = round_through<T>(x);
    for (float& x : inputs.v) x = round_through<T>(x);
    pack_performer_projection(projection, packed.data());
    reset();
  }
  void reset() {
    state.assign(shape.batch_heads * shape.features * shape.dv, 1.0f);  // reset must clear them
    normalizer.assign(shape.batch_heads * shape.features, 1.0f);
    running_max.assign(shape.batch_heads, 1.0f);
    value_sum.assign(performer_value_sum_floats(shape), 1.0f);
    performer_reset_state(shape, state.data(), normalizer.data(), running_max.data(), value_sum.data());
  }
  // x [batch_heads, tokens, dim] of the first `count` tokens, in storage T.
  std::vector<T> prefix(const std::vector<float>& x, std::int64_t count, std::int64_t dim) const {
    std::vector<T> out(shape.batch_heads * count * dim);
    for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
      for (std::int64_t i = 0; i < count * dim; ++i) out[bh * count * dim + i] = from_float<T>(x[bh * tokens * dim + i]);
    }
    return out;
  }
  std::vector<T> token(const std::vector<float>& x, std::int64_t t, std::int64_t dim) const {
    std::vector<T> out(shape.batch_heads * dim);
    for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
      for (std::int64_t c = 0; c < dim; ++c) out[bh * dim + c] = from_float<T>(x[(bh * tokens + t) * dim + c]);
    }
    return out;
  }
  std::vector<T> chunkwise(std::int64_t count) {
    reset();
    const std::vector<T> q = prefix(inputs.q, count, shape.dk), k = prefix(inputs.k, count, shape.dk),
                         v = prefix(inputs.v, count, shape.dv);
    std::vector<T> out(v.size());
    std::vector<float> workspace(performer_prefill_workspace_floats(shape, 2));
    performer_prefill_chunkwise(shape, count, packed.data(), q.data(), k.data(), v.data(), state.data(),
                                normalizer.data(), running_max.data(), workspace.data(), 2, out.data(), value_sum.data());
    return out;
  }
  PerformerResult reference(std::int64_t bh, std::int64_t count) const {
    return performer_scan(inputs.head_matrix(inputs.q, bh, count), inputs.head_matrix(inputs.k, bh, count),
                          inputs.head_matrix(inputs.v, bh, count), projection, shape.kind, shape.features,
                          PerformerStabilizer::published);
  }

  std::int64_t tokens;
  AttentionInputs inputs;
  PerformerShape shape;
  MatrixD projection;
  std::vector<float> packed;
  std::vector<float> state, normalizer, running_max, value_sum;
};

// max |out - ref| / max |ref| of head rows [bh, count, dv] against the reference of each head.
template <class T>
double error_vs_reference(const Published<T>& p, const std::vector<T>& out, std::int64_t count) {
  double diff = 0, scale = 0;
  for (std::int64_t bh = 0; bh < p.shape.batch_heads; ++bh) {
    const PerformerResult ref = p.reference(bh, count);
    for (std::size_t i = 0; i < ref.outputs.data.size(); ++i) {
      diff = std::max(diff, std::fabs(to_float(out[bh * count * p.shape.dv + i]) - ref.outputs.data[i]));
      scale = std::max(scale, std::fabs(ref.outputs.data[i]));
    }
  }
  return diff / scale;
}

TEST(PerformerPublished, FeaturesFollowThePublishedFormula) {
  const std::int64_t dk = 8, m = 12;
  const MatrixD w = performer_projection(PerformerFeatures::favor_plus, m, dk, 3);
  std::vector<double> x(dk);
  for (std::int64_t c = 0; c < dk; ++c) x[c] = 1.5 * std::sin(1.0 + c);  // |x~|^2/2 well above 0
  // performer-pytorch's softmax_kernel, written out: data_dash = w.x~, diag = |x~|^2 / 2.
  const double normaliser = std::pow(static_cast<double>(dk), -0.25);
  std::vector<double> dash(m);
  double diag = 0, top = -std::numeric_limits<double>::infinity();
  for (std::int64_t c = 0; c < dk; ++c) diag += 0.5 * x[c] * x[c] * normaliser * normaliser;
  for (std::int64_t i = 0; i < m; ++i) {
    dash[i] = 0;
    for (std::int64_t c = 0; c < dk; ++c) dash[i] += normaliser * x[c] * w(i, c);
    top = std::max(top, dash[i]);
  }
  const double key_max = top + 2.0;  // some later key was larger
  const std::vector<double> query = performer_published_features(x.data(), dk, w, m, std::nullopt);
  const std::vector<double> key = performer_published_features(x.data(), dk, w, m, key_max);
  for (std::int64_t i = 0; i < m; ++i) {
    EXPECT_NEAR(query[i], (std::exp(dash[i] - diag - top) + 1e-6) / std::sqrt(12.0), 1e-15);
    EXPECT_NEAR(key[i], (std::exp(dash[i] - diag - key_max) + 1e-6) / std::sqrt(12.0), 1e-15);
  }
  // The causal form keeps eps relative to the token's own largest feature: another floor.
  const PerformerTokenFeatures causal = performer_token_features(x.data(), dk, w, PerformerFeatures::favor_plus, m);
  double largest_gap = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    largest_gap = std::max(largest_gap, std::fabs(causal.features[i] / causal.features[0] - query[i] / query[0]));
  }
  EXPECT_GT(largest_gap, 1e-7);
}

TEST(PerformerPublished, ChangesTheOutputAtUnitScale) {
  // The reason the option exists: at qk-scale 1 the two placements of eps give different attention.
  Published<float> p(published_cell(Phase::prefill, 120, 64, DType::float32), 120);
  const PerformerResult published = p.reference(0, 120);
  const PerformerResult causal = performer_scan(p.inputs.head_matrix(p.inputs.q, 0, 120),
                                                p.inputs.head_matrix(p.inputs.k, 0, 120),
                                                p.inputs.head_matrix(p.inputs.v, 0, 120), p.projection,
                                                PerformerFeatures::favor_plus, 64);
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < causal.outputs.data.size(); ++i) {
    diff = std::max(diff, std::fabs(published.outputs.data[i] - causal.outputs.data[i]));
    scale = std::max(scale, std::fabs(causal.outputs.data[i]));
  }
  EXPECT_GT(diff / scale, 1e-2);
}

TEST(PerformerPublished, ChunkwiseMatchesReferenceIncludingStates) {
  for (std::int64_t count : {1, 64, 100, 150}) {  // one token, one chunk, partial chunks
    Published<float> p(published_cell(Phase::prefill, 150, 48, DType::float32), 150);
    const std::vector<float> out = p.chunkwise(count);
    EXPECT_LT(error_vs_reference(p, out, count), dtype_tolerance(DType::float32)) << count;
    for (std::int64_t bh = 0; bh < p.shape.batch_heads; ++bh) {
      const PerformerResult ref = p.reference(bh, count);
      // M is the key max of the sequence; S and z are absolute (performer-pytorch's context sums).
      EXPECT_NEAR(p.running_max[bh], ref.running_max, 1e-5 * std::max(1.0, std::fabs(ref.running_max)));
      for (std::int64_t i = 0; i < p.shape.features; ++i) {
        EXPECT_NEAR(p.normalizer[bh * p.shape.features + i], ref.normalizer[i], 1e-4 * std::fabs(ref.normalizer[i]));
      }
      EXPECT_FLOAT_EQ(p.value_sum[bh * (p.shape.dv + 1) + p.shape.dv], static_cast<float>(count));
    }
  }
  Published<bf16> b(published_cell(Phase::prefill, 100, 48, DType::bfloat16), 100);
  EXPECT_LT(error_vs_reference(b, b.chunkwise(100), 100), dtype_tolerance(DType::bfloat16));
}

TEST(PerformerPublished, RecurrentFromThePresetMaxEqualsChunkwise) {
  // What `arch-bench conformance` does: M preset to the sequence's key max, then decode steps.
  Published<float> p(published_cell(Phase::prefill, 130, 40, DType::float32), 130);
  const std::vector<float> chunkwise = p.chunkwise(130);
  const std::vector<float> state = p.state, running_max = p.running_max;
  p.reset();
  const std::vector<float> k = p.prefix(p.inputs.k, 130, p.shape.dk);
  performer_key_max(p.shape, 130, p.packed.data(), k.data(), p.running_max.data());
  EXPECT_EQ(p.running_max, running_max);
  const std::vector<float> q = p.prefix(p.inputs.q, 130, p.shape.dk), v = p.prefix(p.inputs.v, 130, p.shape.dv);
  std::vector<float> recurrent(v.size());
  performer_prefill_recurrent(p.shape, 130, p.packed.data(), q.data(), k.data(), v.data(), p.state.data(),
                              p.normalizer.data(), p.running_max.data(), recurrent.data(), p.value_sum.data());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < recurrent.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(recurrent[i] - chunkwise[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(chunkwise[i])));
  }
  EXPECT_LT(diff / scale, 1e-5);
  for (std::size_t i = 0; i < state.size(); ++i) EXPECT_NEAR(p.state[i], state[i], 1e-5 * std::fabs(state[i]) + 1e-9);
}

TEST(PerformerPublished, DecodeStepIsThePublishedPrefillOverThePrefix) {
  // The context ends inside the third chunk; the new key is scaled up so that it raises the key
  // max: the step must bring (S, z) to the new M with the eps part unchanged.
  for (const double boost : {1.0, 3.0}) {
    const std::int64_t t = 130;
    Cell cell = published_cell(Phase::prefill, t + 1, 40, DType::float32);
    Published<float> p(cell, t + 1);
    for (std::int64_t bh = 0; bh < p.shape.batch_heads; ++bh) {
      for (std::int64_t c = 0; c < p.shape.dk; ++c) p.inputs.k[(bh * (t + 1) + t) * p.shape.dk + c] *= boost;
    }
    const std::vector<float> full = p.chunkwise(t + 1);
    const float full_max = p.running_max[0];
    p.chunkwise(t);
    const float context_max = p.running_max[0];
    const std::vector<float> q = p.token(p.inputs.q, t, p.shape.dk), k = p.token(p.inputs.k, t, p.shape.dk),
                             v = p.token(p.inputs.v, t, p.shape.dv);
    std::vector<float> out(v.size());
    performer_decode_step(p.shape, p.packed.data(), q.data(), k.data(), v.data(), p.state.data(), p.normalizer.data(),
                          p.running_max.data(), out.data(), p.value_sum.data());
    if (boost > 1) {
      EXPECT_GT(full_max, context_max);  // the case the rescaling is for
    }
    EXPECT_EQ(p.running_max[0], full_max);
    double diff = 0, scale = 0;
    for (std::int64_t bh = 0; bh < p.shape.batch_heads; ++bh) {
      const PerformerResult ref = p.reference(bh, t + 1);
      for (std::int64_t j = 0; j < p.shape.dv; ++j) {
        diff = std::max(diff, std::fabs(out[bh * p.shape.dv + j] - ref.outputs(t, j)));
        scale = std::max(scale, std::fabs(ref.outputs(t, j)));
        EXPECT_NEAR(out[bh * p.shape.dv + j], full[(bh * (t + 1) + t) * p.shape.dv + j], 1e-4 * scale + 1e-7);
      }
    }
    EXPECT_LT(diff / scale, dtype_tolerance(DType::float32)) << boost;
  }
}

TEST(PerformerPublished, MechanismCellsCheckAgainstThePublishedReference) {
  CpuBackend backend;
  const Mechanism* performer = find_mechanism("performer");
  ASSERT_NE(performer, nullptr);
  for (DType dtype : {DType::float32, DType::bfloat16}) {
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      const Cell cell = published_cell(phase, 100, 48, dtype);
      ASSERT_FALSE(performer->unsupported(cell));
      auto prepared = performer->prepare(cell, 9, backend);
      prepared->run();
      const Accuracy accuracy = prepared->check();
      EXPECT_TRUE(accuracy.output_finite);
      EXPECT_LE(accuracy.max_rel_error, dtype_tolerance(dtype)) << dtype_name(dtype) << " " << phase_name(phase);
      EXPECT_LE(backend.allocator().current_bytes(), performer->predicted_peak_bytes(cell));
    }
  }
  // The state carries sum_t v_t and the count besides (S, z, M): (dv + 1) floats per head more.
  Cell causal = published_cell(Phase::decode, 100, 48, DType::float32);
  causal.options.set("favor_stabilizer", std::string("causal"));
  EXPECT_EQ(performer->state_bytes(published_cell(Phase::decode, 100, 48, DType::float32)) -
                performer->state_bytes(causal),
            2 * (32 + 1) * 4);
  Cell trig = published_cell(Phase::decode, 100, 48, DType::float32);
  trig.options.set("feature_map", std::string("trig"));
  ASSERT_TRUE(performer->unsupported(trig).has_value());
  EXPECT_NE(performer->unsupported(trig)->find("favor+"), std::string::npos);
  Cell unknown = causal;
  unknown.options.set("favor_stabilizer", std::string("lookahead"));
  ASSERT_TRUE(performer->unsupported(unknown).has_value());
  EXPECT_NE(performer->unsupported(unknown)->find("lookahead"), std::string::npos);
}

TEST(PerformerPublished, ConformanceRecordsAndPassesWithTheOption) {
  testing::TempFolder folder;
  MechanismOptions options;
  options.set("features", std::int64_t{32});
  options.set("favor_stabilizer", std::string("published"));
  generate_conformance_inputs({folder.path() / "in", "performer", {1, 2, 70, 16}, options, 7, DType::float32});
  const ConformanceResult result =
      run_conformance({"performer", folder.path() / "in", folder.path() / "out", DType::float32, options, false});
  EXPECT_TRUE(result.passed) << result.manifest.dump(2);
  EXPECT_EQ(result.manifest["options"]["favor_stabilizer"], "published");
  // decode_out (from the preset M) equals prefill_out row for row.
  EXPECT_TRUE(result.manifest["decode_out"]["vs_prefill"]["within_tolerance"].get<bool>());
}

TEST(PerformerPublished, CliTakesTheOptionRecordsItAndRefusesUnknownOnes) {
  testing::TempFolder folder;
  const fs::path report = folder.path() / "r.json";
  const std::string tiny = " --mode landscape --candidates performer --sequence-lengths 16 --heads 1 --head-dim 16 "
                           "--warmup 0 --repeats 1 --phase prefill -q";
  const testing::CliResult bad = testing::run_cli("run --output '" + report.string() + "' --favor-stabilizer exact" + tiny);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--favor-stabilizer"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(report));
  const testing::CliResult good =
      testing::run_cli("run --output '" + report.string() + "' --favor-stabilizer published" + tiny);
  ASSERT_EQ(good.exit_code, 0) << good.err;
  const nlohmann::json json = testing::read_json(report);
  bool performer_row = false;
  for (const auto& row : json["metrics"]["rows"]) {
    // A row records the options its own mechanism declares: the softmax_kv baseline takes none of performer's.
    if (row["mechanism"] == "performer") {
      EXPECT_EQ(row["options"]["favor_stabilizer"], "published");
    }
    if (row["mechanism"] == "softmax_kv") {
      EXPECT_FALSE(row["options"].contains("favor_stabilizer"));
    }
    performer_row |= row["mechanism"] == "performer" && row["within_tolerance"].get<bool>();
  }
  EXPECT_TRUE(performer_row);
}

TEST(PerformerPublished, DiffPairsOldReportsAsCausalAndNeverAcrossStabilisers) {
  // A row of a report written before the option existed has no favor_stabilizer: it is causal.
  const nlohmann::json old_row = {{"mechanism", "performer"}, {"phase", "decode"}, {"sequence_length", 512},
                                  {"options", {{"feature_map", "favor+"}, {"features", 256}}}};
  nlohmann::json causal_row = old_row, published_row = old_row;
  causal_row["options"]["favor_stabilizer"] = "causal";
  published_row["options"]["favor_stabilizer"] = "published";
  const nlohmann::json old_rows = nlohmann::json::array({old_row});
  const nlohmann::json new_rows = nlohmann::json::array({causal_row, published_row});
  const auto pairs = pair_rows(old_rows, new_rows);  // points into old_rows and new_rows
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_NE(pairs[0].old_row, nullptr);
  ASSERT_NE(pairs[0].new_row, nullptr);
  EXPECT_EQ((*pairs[0].new_row)["options"]["favor_stabilizer"], "causal");
  EXPECT_EQ(pairs[1].old_row, nullptr);  // the published row has no partner
  EXPECT_EQ((*pairs[1].new_row)["options"]["favor_stabilizer"], "published");
}

}  // namespace
}  // namespace arch_bench
