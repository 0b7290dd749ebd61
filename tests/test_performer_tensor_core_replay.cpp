// performer's bf16 prefill on tensor cores (mechanisms/performer/cuda_tensor_core.cu for the
// features, cuda_tensor_core_chunks.cu for the chunk states and the outputs), on the CPU: its
// arithmetic replayed (mechanisms/performer/cuda_replay.hpp: W split into bf16 W_hi + W_lo, every
// product's operands rounded to bf16 where the kernels round them, fp32 accumulation per 16-wide
// step, the fp32 prefix over chunks, the output rounded to bf16) against the fp64 reference, over
// head widths, feature counts, lengths and both feature maps, with a carried state; and the
// must-fail variants (W rounded to bf16 once, the causal mask dropped, the state entering each chunk
// dropped, the state's operands or the stored phi(k) as bf16 hi alone, the inter-chunk terms left
// relative to the wrong M, the state scan writing a chunk's entering state late or in bf16), which
// the checks must catch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/performer/cuda_replay.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

constexpr std::uint64_t kSeed = 23;
const double kTolerance = dtype_tolerance(DType::bfloat16);

struct Problem {
  PerformerShape shape;
  AttentionInputs inputs;
  MatrixD projection;                   // fp64 rows [n, dk] for the reference
  std::vector<float> packed;            // [dk, n] fp32, what the device splits
  PerformerSplitProjection split;
};

Problem make_problem(std::int64_t dk, std::int64_t m, PerformerFeatures kind, std::int64_t tokens) {
  Cell cell = testing::small_cell(2, dk, tokens, DType::bfloat16, Phase::prefill);
  cell.mechanism = "performer";
  // Trig denominators come close to 0 at unit scale (as in the GPU tests); x0.3 keeps them away.
  if (kind == PerformerFeatures::trig) cell.options.set("qk_scale", 0.3);
  Problem p{{cell.batch_heads(), dk, dk, m, kind}, make_attention_inputs(cell, tokens, kSeed),
            performer_projection(kind, m, dk, kSeed), {}, {}};
  p.packed.resize(static_cast<std::size_t>(performer_projection_floats(p.shape)));
  pack_performer_projection(p.projection, p.packed.data());
  p.split = split_performer_projection(p.packed.data(), static_cast<int>(dk), static_cast<int>(p.shape.projection_rows()));
  return p;
}

std::string label(const Problem& p) {
  return performer_features_name(p.shape.kind) + " dk " + std::to_string(p.shape.dk) + " m " +
         std::to_string(p.shape.features) + " L " + std::to_string(p.inputs.tokens);
}

// The largest feature error of the replayed queries and keys vs the fp64 features: favor+ relative
// per feature (an error e in a projection is a relative error e in exp(p - c)), trig in units of the
// features' scale sqrt(2/m) (|sin| <= 1), and each key's log-scale c absolutely (its weight e^c
// then carries relative error |dc|).
double feature_error(const Problem& p, PerformerReplayFault fault) {
  const std::int64_t dk = p.shape.dk, m = p.shape.features;
  const double trig_scale = std::sqrt(2.0 / static_cast<double>(m));
  std::vector<float> f(static_cast<std::size_t>(m));
  std::vector<double> x(static_cast<std::size_t>(dk));
  double worst = 0.0;
  for (std::int64_t bh = 0; bh < p.inputs.batch_heads; ++bh) {
    for (std::int64_t t = 0; t < p.inputs.tokens; ++t) {
      for (const bool key : {false, true}) {
        const float* row = key ? p.inputs.k_at(bh, t) : p.inputs.q_at(bh, t);
        const float c = replay_performer_tensor_core_token(p.shape, p.split, row, f.data(), fault);
        std::copy_n(row, dk, x.begin());
        const PerformerTokenFeatures ref = performer_token_features(x.data(), dk, p.projection, p.shape.kind, m);
        for (std::int64_t i = 0; i < m; ++i) {
          const double diff = std::fabs(f[static_cast<std::size_t>(i)] - ref.features[static_cast<std::size_t>(i)]);
          worst = std::max(worst, p.shape.kind == PerformerFeatures::trig ? diff / trig_scale
                                                                           : diff / ref.features[static_cast<std::size_t>(i)]);
        }
        if (key) worst = std::max(worst, std::fabs(c - ref.log_scale));
      }
    }
  }
  return worst;
}

// The replayed prefill's outputs vs the fp64 reference (performer_scan), as the cells' check
// measures them: max |out - ref| / max |ref| over every row.
double output_error(const Problem& p, const std::vector<float>& out, std::int64_t tokens) {
  ErrorAccumulator errors;
  const std::int64_t dv = p.shape.dv;
  for (std::int64_t bh = 0; bh < p.inputs.batch_heads; ++bh) {
    const PerformerResult ref =
        performer_scan(p.inputs.head_matrix(p.inputs.q, bh, tokens), p.inputs.head_matrix(p.inputs.k, bh, tokens),
                       p.inputs.head_matrix(p.inputs.v, bh, tokens), p.projection, p.shape.kind, p.shape.features);
    for (std::int64_t t = 0; t < tokens; ++t) errors.add_row(out.data() + (bh * tokens + t) * dv, ref.outputs.row(t), dv);
  }
  return errors.finish().max_rel_error;
}

// The replayed (S, z) after the prefill vs the reference's, both relative to their M: max |diff| /
// max |ref| over S, and likewise over z.
double state_error(const Problem& p, const PerformerReplayState& state) {
  const std::int64_t tokens = p.inputs.tokens, m = p.shape.features, dv = p.shape.dv;
  double s_diff = 0.0, s_scale = 0.0, z_diff = 0.0, z_scale = 0.0;
  for (std::int64_t bh = 0; bh < p.inputs.batch_heads; ++bh) {
    const PerformerResult ref =
        performer_scan(p.inputs.head_matrix(p.inputs.q, bh, tokens), p.inputs.head_matrix(p.inputs.k, bh, tokens),
                       p.inputs.head_matrix(p.inputs.v, bh, tokens), p.projection, p.shape.kind, m);
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < dv; ++j) {
        const double r = ref.state(i, j);
        s_diff = std::max(s_diff, std::fabs(state.state[static_cast<std::size_t>((bh * m + i) * dv + j)] - r));
        s_scale = std::max(s_scale, std::fabs(r));
      }
      const double r = ref.normalizer[static_cast<std::size_t>(i)];
      z_diff = std::max(z_diff, std::fabs(state.normalizer[static_cast<std::size_t>(bh * m + i)] - r));
      z_scale = std::max(z_scale, std::fabs(r));
    }
  }
  return std::max(s_diff / s_scale, z_diff / z_scale);
}

std::vector<float> replay_all(const Problem& p, PerformerReplayState& state, PerformerReplayFault fault) {
  return replay_performer_tensor_core_prefill(p.shape, p.inputs.tokens, p.split, p.inputs.q.data(), p.inputs.k.data(),
                                              p.inputs.v.data(), state, fault);
}

// The faithful replay beside a faulty one on the same problem: their output and state errors.
struct FaultAgainstFaithful {
  double faithful_outputs, fault_outputs, faithful_state, fault_state;
};
FaultAgainstFaithful replay_against_faithful(const Problem& p, PerformerReplayFault fault) {
  PerformerReplayState faithful = performer_replay_empty_state(p.shape), faulty = faithful;
  FaultAgainstFaithful e{};
  e.faithful_outputs = output_error(p, replay_all(p, faithful, PerformerReplayFault::none), p.inputs.tokens);
  e.fault_outputs = output_error(p, replay_all(p, faulty, fault), p.inputs.tokens);
  e.faithful_state = state_error(p, faithful);
  e.fault_state = state_error(p, faulty);
  return e;
}

TEST(PerformerTensorCoreReplay, SplitProjectionHoldsWToSeventeenBits) {
  const Problem p = make_problem(64, 256, PerformerFeatures::favor_plus, 1);
  double split = 0.0, high = 0.0;
  for (std::size_t e = 0; e < p.packed.size(); ++e) {
    const double w = p.packed[e];
    ASSERT_EQ(p.split.high[e], to_float(bf16(p.split.high[e])));  // each part is a bf16 value
    ASSERT_EQ(p.split.low[e], to_float(bf16(p.split.low[e])));
    split = std::max(split, std::fabs(p.split.high[e] + static_cast<double>(p.split.low[e]) - w) / std::fabs(w));
    high = std::max(high, std::fabs(p.split.high[e] - w) / std::fabs(w));
  }
  EXPECT_LE(split, std::ldexp(1.0, -17));
  EXPECT_GT(high, std::ldexp(1.0, -10));  // W_hi alone: bf16's 2^-9 (half an ulp of 8 bits)
}

// The accuracy grid: dk 16..128, m 16..256 (odd, and not a multiple of 16), L 1..1000 (16 chunks
// through the state scan), both maps.
TEST(PerformerTensorCoreReplay, FeaturesAndOutputsMeetTheBf16ToleranceAgainstFp64) {
  struct Case {
    std::int64_t dk, m, tokens;
    PerformerFeatures kind;
  };
  const PerformerFeatures favor = PerformerFeatures::favor_plus, trig = PerformerFeatures::trig;
  for (const Case c : {Case{16, 16, 1, favor}, Case{16, 256, 65, trig}, Case{48, 100, 63, favor},
                       Case{64, 256, 300, favor}, Case{64, 256, 300, trig}, Case{100, 30, 64, trig},
                       Case{128, 256, 130, favor}, Case{128, 128, 200, trig}, Case{32, 17, 90, favor},
                       Case{64, 128, 1000, favor}, Case{64, 128, 1000, trig}}) {
    const Problem p = make_problem(c.dk, c.m, c.kind, c.tokens);
    const double features = feature_error(p, PerformerReplayFault::none);
    EXPECT_LT(features, kTolerance / 10) << label(p);  // ~2^-17 |x| |W| per projection
    PerformerReplayState state = performer_replay_empty_state(p.shape);
    const std::vector<float> out = replay_all(p, state, PerformerReplayFault::none);
    const double outputs = output_error(p, out, c.tokens);
    EXPECT_LT(outputs, kTolerance) << label(p);
    // The state left behind: every term of it went through one bf16 rounding (stage 3's K~).
    const double states = state_error(p, state);
    EXPECT_LT(states, kTolerance) << label(p);
    std::printf("[ replay   ] %-28s features %.2e  outputs %.2e  state %.2e\n", label(p).c_str(), features, outputs,
                states);
  }
}

// The must-fail variant: W rounded to bf16 once. Its features miss by 2^-9 per term of every
// projection, which the feature check catches at >= 3x the tolerance once |x~| |w| is large enough
// (wide heads, unit-scale favor+ queries and keys).
TEST(PerformerTensorCoreReplay, HighPartAloneMissesTheFeatureToleranceByThreeTimes) {
  for (const std::int64_t dk : {64, 128}) {
    const Problem p = make_problem(dk, 256, PerformerFeatures::favor_plus, 130);
    const double split = feature_error(p, PerformerReplayFault::none);
    const double high = feature_error(p, PerformerReplayFault::high_part_only);
    // The outputs average many features' errors, so they hide much of it (recorded, not asserted).
    PerformerReplayState state = performer_replay_empty_state(p.shape);
    const double outputs = output_error(p, replay_all(p, state, PerformerReplayFault::high_part_only), p.inputs.tokens);
    std::printf("[ replay   ] %-28s features: split %.2e, W_hi alone %.2e (its outputs %.2e)\n", label(p).c_str(), split,
                high, outputs);
    EXPECT_LT(split, kTolerance / 10) << label(p);
    EXPECT_GT(high, 3 * kTolerance) << label(p);
    EXPECT_GT(high, 100 * split) << label(p);
  }
}

// The must-fail variants of stage 5: a row that also sees its chunk's later keys, and a chunk that
// leaves out the state entering it (everything before the chunk). Each must miss the tolerance by
// at least 3x over several chunks, for both maps, where the faithful replay meets it.
TEST(PerformerTensorCoreReplay, CausalMaskAndCarriedStateAreEachNeeded) {
  for (const PerformerFeatures kind : {PerformerFeatures::favor_plus, PerformerFeatures::trig}) {
    const Problem p = make_problem(64, 256, kind, 300);
    double errors[3];
    const PerformerReplayFault faults[3] = {PerformerReplayFault::none, PerformerReplayFault::no_causal_mask,
                                            PerformerReplayFault::no_carried_state};
    for (int f = 0; f < 3; ++f) {
      PerformerReplayState state = performer_replay_empty_state(p.shape);
      errors[f] = output_error(p, replay_all(p, state, faults[f]), p.inputs.tokens);
    }
    std::printf("[ replay   ] %-28s outputs %.2e; without the causal mask %.2e, without the carried state %.2e\n",
                label(p).c_str(), errors[0], errors[1], errors[2]);
    EXPECT_LT(errors[0], kTolerance) << label(p);
    EXPECT_GT(errors[1], 3 * kTolerance) << label(p);
    EXPECT_GT(errors[2], 3 * kTolerance) << label(p);
  }
}

// The must-fail variant of the state's precision: K~ in stage 3 and S_in in stage 5 as bf16 hi
// alone (one product each instead of two). The outputs hide much of it (a sum of terms with mixed
// signs, then bf16; recorded, not asserted), but the state it leaves misses the 1e-4 that hi + lo
// meets by 3x: each term's 2^-9 instead of ~2^-17.
TEST(PerformerTensorCoreReplay, StateHighPartAloneMissesTheStateBoundByThreeTimes) {
  constexpr double kStateBound = 1e-4;
  for (const PerformerFeatures kind : {PerformerFeatures::favor_plus, PerformerFeatures::trig}) {
    const Problem p = make_problem(64, 256, kind, 300);
    const FaultAgainstFaithful e = replay_against_faithful(p, PerformerReplayFault::state_high_part_only);
    const double split_outputs = e.faithful_outputs, high_outputs = e.fault_outputs;
    const double split_state = e.faithful_state, high_state = e.fault_state;
    std::printf("[ replay   ] %-28s state: hi + lo %.2e, hi alone %.2e (outputs %.2e, %.2e)\n", label(p).c_str(),
                split_state, high_state, split_outputs, high_outputs);
    EXPECT_LT(split_state, kStateBound) << label(p);
    EXPECT_GT(high_state, 3 * kStateBound) << label(p);
  }
}

// The must-fail variant of the stored key features: phi(k) kept as bf16 hi alone (stage 3 without
// the lo plane stage 1 writes). Stage 5 reads hi alone anyway, so the outputs do not move (recorded,
// not asserted); the chunk states, and so the state left behind, take 2^-9 per term. With trig
// features (signed, a state of cancelling terms) that misses the 1e-4 which hi + lo meets by 3x
// and more (2.1e-3 against 5e-6); favor+'s positive features average it down to ~8e-5, inside the
// bound but ~10x hi + lo's, too close to it to rest on (recorded, and held to 5x hi + lo's).
TEST(PerformerTensorCoreReplay, KeyFeaturesHighPlaneAloneMissesTheStateBoundByThreeTimes) {
  constexpr double kStateBound = 1e-4;
  for (const PerformerFeatures kind : {PerformerFeatures::favor_plus, PerformerFeatures::trig}) {
    const Problem p = make_problem(64, 256, kind, 300);
    const FaultAgainstFaithful e = replay_against_faithful(p, PerformerReplayFault::key_features_high_only);
    const double split_outputs = e.faithful_outputs, high_outputs = e.fault_outputs;
    const double split_state = e.faithful_state, high_state = e.fault_state;
    std::printf("[ replay   ] %-28s state: phi(k) hi + lo %.2e, hi alone %.2e (outputs %.2e, %.2e)\n",
                label(p).c_str(), split_state, high_state, split_outputs, high_outputs);
    EXPECT_LT(split_state, kStateBound) << label(p);
    EXPECT_EQ(high_outputs, split_outputs) << label(p);  // stage 5 never reads the lo plane
    if (kind == PerformerFeatures::trig) {
      EXPECT_GT(high_state, 3 * kStateBound) << label(p);
    } else {
      EXPECT_GT(high_state, 5 * split_state) << label(p);
    }
  }
}

// The must-fail variant of stage 5's order: phi(q) S_in and phi(q) . z_in are products of the
// stored bf16 phi(q), brought from the M the state enters with to each row's M_r afterwards in
// fp32. Leaving them at M_in weights the chunks before against this chunk's keys by e^(M_r - M_in)
// too much wherever M rose since, which favor+'s outputs must show by 3x the tolerance (its
// log-scales max p - |k~|^2/2 move M by whole units). Trig's log-scales |k~|^2/2 at the tests'
// qk_scale 0.3 barely move M after the first keys, so its fault stays near the tolerance (recorded;
// asserted only to be worse than the faithful replay).
TEST(PerformerTensorCoreReplay, InterChunkTermsNeedTheRowScale) {
  for (const PerformerFeatures kind : {PerformerFeatures::favor_plus, PerformerFeatures::trig}) {
    const Problem p = make_problem(64, 256, kind, 300);
    const FaultAgainstFaithful e = replay_against_faithful(p, PerformerReplayFault::no_row_scale);
    const double with = e.faithful_outputs, without = e.fault_outputs;
    std::printf("[ replay   ] %-28s outputs %.2e; inter-chunk terms left at M_in %.2e\n", label(p).c_str(), with,
                without);
    EXPECT_LT(with, kTolerance) << label(p);
    if (kind == PerformerFeatures::favor_plus) {
      EXPECT_GT(without, 3 * kTolerance) << label(p);
    } else {
      EXPECT_GT(without, 2 * with) << label(p);
    }
  }
}

// The must-fail variants of the state scan (stages 3 and 4 in one pass): the state entering a chunk
// written after the chunk's own keys were added (stage 5 then counts them twice: outputs off by 3x
// the tolerance and more), and the state entering each chunk stored and carried as bf16 (what bf16
// per-chunk states would do: the state left behind misses 1e-4 by 3x; the outputs recorded).
TEST(PerformerTensorCoreReplay, StateScanWritesTheEnteringStateInFp32) {
  constexpr double kStateBound = 1e-4;
  for (const PerformerFeatures kind : {PerformerFeatures::favor_plus, PerformerFeatures::trig}) {
    const Problem p = make_problem(64, 256, kind, 300);
    const FaultAgainstFaithful late = replay_against_faithful(p, PerformerReplayFault::state_written_after_update);
    const FaultAgainstFaithful rounded = replay_against_faithful(p, PerformerReplayFault::chunk_states_bf16);
    const double outputs = late.faithful_outputs, late_outputs = late.fault_outputs;
    const double rounded_outputs = rounded.fault_outputs;
    const double state = late.faithful_state, rounded_state = rounded.fault_state;
    std::printf("[ replay   ] %-28s outputs %.2e, S_in written late %.2e; state %.2e, chunk states bf16 %.2e "
                "(outputs %.2e)\n",
                label(p).c_str(), outputs, late_outputs, state, rounded_state, rounded_outputs);
    EXPECT_LT(outputs, kTolerance) << label(p);
    EXPECT_LT(state, kStateBound) << label(p);
    EXPECT_GT(late_outputs, 3 * kTolerance) << label(p);
    EXPECT_GT(rounded_state, 3 * kStateBound) << label(p);
  }
}

// A prefill over [0, a) then [a, L) carrying (S, z, M) as the kernels store them equals the prefill
// over [0, L): the rows after a within a bf16 rounding of each other, both within the tolerance.
// The states agree to 1e-5 although the chunks differ ([64, 100) and [100, 160) against [64, 128)
// and [128, 160)) and stage 3 weights each key relative to its own chunk's last M: the weighted keys
// go in as bf16 hi + lo (~2^-17), so the two runs' roundings differ by far less than bf16's.
TEST(PerformerTensorCoreReplay, CarriedStateContinuesThePrefill) {
  for (const PerformerFeatures kind : {PerformerFeatures::favor_plus, PerformerFeatures::trig}) {
    const std::int64_t tokens = 160, head = 100;
    const Problem p = make_problem(64, 128, kind, tokens);
    PerformerReplayState whole = performer_replay_empty_state(p.shape);
    const std::vector<float> all = replay_all(p, whole, PerformerReplayFault::none);

    PerformerReplayState carried = performer_replay_empty_state(p.shape);
    const std::int64_t dv = p.shape.dv, bh = p.shape.batch_heads;
    const std::vector<float> q0 = p.inputs.head_rows(p.inputs.q, 0, head), k0 = p.inputs.head_rows(p.inputs.k, 0, head),
                             v0 = p.inputs.head_rows(p.inputs.v, 0, head);
    const std::vector<float> q1 = p.inputs.head_rows(p.inputs.q, head, tokens - head),
                             k1 = p.inputs.head_rows(p.inputs.k, head, tokens - head),
                             v1 = p.inputs.head_rows(p.inputs.v, head, tokens - head);
    replay_performer_tensor_core_prefill(p.shape, head, p.split, q0.data(), k0.data(), v0.data(), carried);
    const std::vector<float> tail = replay_performer_tensor_core_prefill(p.shape, tokens - head, p.split, q1.data(),
                                                                         k1.data(), v1.data(), carried);
    double worst = 0.0, scale = 0.0;
    for (std::int64_t h = 0; h < bh; ++h) {
      for (std::int64_t t = head; t < tokens; ++t) {
        for (std::int64_t j = 0; j < dv; ++j) {
          const float a = all[static_cast<std::size_t>((h * tokens + t) * dv + j)];
          const float b = tail[static_cast<std::size_t>((h * (tokens - head) + t - head) * dv + j)];
          worst = std::max(worst, static_cast<double>(std::fabs(a - b)));
          scale = std::max(scale, static_cast<double>(std::fabs(a)));
        }
      }
    }
    EXPECT_LE(worst, scale * std::ldexp(1.0, -7)) << performer_features_name(kind);
    EXPECT_EQ(carried.running_max, whole.running_max) << performer_features_name(kind);
    double state_diff = 0.0, state_scale = 0.0;
    for (std::size_t e = 0; e < whole.state.size(); ++e) {
      state_diff = std::max(state_diff, static_cast<double>(std::fabs(carried.state[e] - whole.state[e])));
      state_scale = std::max(state_scale, static_cast<double>(std::fabs(whole.state[e])));
    }
    std::printf("[ replay   ] %-8s split at %lld: outputs differ by %.2e, states by %.2e (relative to the largest)\n",
                performer_features_name(kind).c_str(), static_cast<long long>(head), worst / scale,
                state_diff / state_scale);
    EXPECT_LE(state_diff, 1e-5 * state_scale) << performer_features_name(kind);
  }
}

}  // namespace
}  // namespace arch_bench
