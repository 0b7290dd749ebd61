// The CUDA prefill's algorithm on the CPU: replay_mamba_prefill (cuda_replay.cpp) runs the warp
// scan kernel's chunking, tiles, lane folds, shuffle scan and carries in the same fp32 operations,
// and is held here to the fp64 reference over lengths around and across the 256-token chunks,
// continuing from a carried state, in fp32 and bf16; a replay that skips the carry must fail. The
// split form (segment maps, their combination, outputs from each segment's entering h) is held to
// the same reference at several segment counts, and replays that drop the segments' carry or
// their decay, or decay a lane's fold by one item instead of its dt sum, must fail by at least
// three times the tolerance. The entry kernel's replay (a thread per (channel, 4 entries),
// cuda_entry.cu) is held to the same reference at N 16 and 8, split and unsplit, and replays with
// an entry left out of a lane's C h chain, a lane's partial dropped from the transpose-reduce, a
// token skipped in it or the segment carry dropped must fail by more than three times the tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/mamba/check.hpp"
#include "mechanisms/mamba/cuda_replay.hpp"
#include "mechanisms/mamba/inputs.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

Cell replay_cell(DType dtype, std::int64_t channels, std::int64_t n, std::int64_t batch, std::int64_t length) {
  Cell cell = testing::mechanism_cell("mamba", 1, channels, length, dtype, Phase::prefill, batch);
  cell.options.set("state_size", n);
  return cell;
}

// Tokens [first, first + count) of the inputs, in storage T and the kernels' layouts.
template <class T>
struct StoredTokens {
  StoredTokens(const MambaInputs& in, std::int64_t first, std::int64_t count) {
    for (std::int64_t r = 0; r < in.rows(); ++r) {
      for (std::int64_t t = first; t < first + count; ++t) {
        u.push_back(from_float<T>(in.row(in.u, r)[t]));
        dt_raw.push_back(from_float<T>(in.row(in.dt_raw, r)[t]));
        z.push_back(from_float<T>(in.row(in.z, r)[t]));
      }
    }
    for (std::int64_t b = 0; b < in.batch; ++b) {
      for (std::int64_t k = 0; k < count * in.state_size; ++k) {
        B.push_back(from_float<T>(in.token(in.B, b, first)[k]));
        C.push_back(from_float<T>(in.token(in.C, b, first)[k]));
      }
    }
  }
  MambaTokens<T> view() const { return {u.data(), dt_raw.data(), z.data(), B.data(), C.data()}; }
  std::vector<T> u, dt_raw, z, B, C;
};

// Replays tokens [first, first + count) from `state`; returns out [rows, count].
// `segments` > 1: the split form (split_mamba_prefill), whatever a device would choose.
template <class T>
std::vector<T> replay(const MambaInputs& in, std::int64_t first, std::int64_t count, std::vector<float>& state,
                      MambaReplayFault fault = MambaReplayFault::none, std::int64_t segments = 1,
                      MambaScanKernel kernel = MambaScanKernel::lane) {
  const StoredTokens<T> x(in, first, count);
  const std::vector<float> A = in.A();
  const MambaParameters params{A.data(), in.dt_bias.data(), in.D.data()};
  std::vector<T> out(static_cast<std::size_t>(in.rows() * count), from_float<T>(std::nanf("")));
  const MambaPrefillPlan plan =
      split_mamba_prefill(plan_mamba_prefill({in.batch, in.channels, in.state_size}, count, 0, kernel), segments);
  replay_mamba_prefill<T>(plan, params, x.view(), state.data(), out.data(), fault);
  return out;
}

// fp32: the replay (exp2f) is held closer than the kernel's 1e-4 (dtype_tolerance), as tight as the
// CPU chunked scan (test_mamba.cpp), so that a small slip in the algorithm shows.
constexpr double kReplayFp32Tolerance = 2e-6;

template <class T>
Accuracy replay_against_reference(const MambaInputs& in, MambaReplayFault fault = MambaReplayFault::none,
                                  std::int64_t segments = 1, MambaScanKernel kernel = MambaScanKernel::lane) {
  std::vector<float> state(static_cast<std::size_t>(in.rows() * in.state_size), 0.0f);
  return check_mamba_prefill<T>(in, replay<T>(in, 0, in.tokens, state, fault, segments, kernel).data());
}

// 9 channels: one full block of warps and one with a single active warp; lengths inside one chunk,
// at and around its edge, across several chunks with a partial last one.
TEST(MambaScanReplay, MatchesTheFp64ReferenceAtEveryLengthFp32) {
  for (const std::int64_t length : {1, 7, 255, 256, 257, 1000, 5000}) {
    const MambaInputs in = make_mamba_inputs(replay_cell(DType::float32, 9, 16, 2, length), length, 31);
    const Accuracy a = replay_against_reference<float>(in);
    EXPECT_TRUE(a.output_finite) << length;
    EXPECT_EQ(a.rows_checked, 2 * length);
    EXPECT_LT(a.max_rel_error, kReplayFp32Tolerance) << "L " << length;
    std::printf("fp32 L %5ld: max_rel_error %.3g\n", static_cast<long>(length), a.max_rel_error);
  }
}

TEST(MambaScanReplay, MatchesTheFp64ReferenceAtEveryLengthBf16) {
  for (const std::int64_t length : {1, 255, 257, 1000, 5000}) {
    const MambaInputs in = make_mamba_inputs(replay_cell(DType::bfloat16, 9, 16, 2, length), length, 37);
    const Accuracy a = replay_against_reference<bf16>(in);
    EXPECT_TRUE(a.output_finite) << length;
    EXPECT_LT(a.max_rel_error, dtype_tolerance(DType::bfloat16)) << "L " << length;
    std::printf("bf16 L %5ld: max_rel_error %.3g\n", static_cast<long>(length), a.max_rel_error);
  }
}

// N 1 and 5 (one partial state group), 17 (a full group and a partial one), 256 (the largest).
TEST(MambaScanReplay, MatchesTheFp64ReferenceForOddStateSizes) {
  for (const std::int64_t n : {1, 5, 17, 256}) {
    const MambaInputs in = make_mamba_inputs(replay_cell(DType::float32, 3, n, 1, 600), 600, 41);
    const Accuracy a = replay_against_reference<float>(in);
    EXPECT_TRUE(a.output_finite) << n;
    EXPECT_LT(a.max_rel_error, kReplayFp32Tolerance) << "N " << n;
  }
}

// Two calls with h carried between them give the outputs and final h of one call over the whole
// sequence, and both match the fp64 reference.
template <class T>
void expect_continues_from_a_carried_state(DType dtype, std::int64_t segments = 1,
                                           MambaScanKernel kernel = MambaScanKernel::lane) {
  const std::int64_t length = 1300, split = 517;
  const MambaInputs in = make_mamba_inputs(replay_cell(dtype, 9, 16, 2, length), length, 43);
  const std::size_t states = static_cast<std::size_t>(in.rows() * in.state_size);
  std::vector<float> whole_state(states, 0.0f), state(states, 0.0f);
  const std::vector<T> whole = replay<T>(in, 0, length, whole_state, MambaReplayFault::none, 1, kernel);
  const std::vector<T> head = replay<T>(in, 0, split, state, MambaReplayFault::none, segments, kernel);
  const std::vector<T> tail = replay<T>(in, split, length - split, state, MambaReplayFault::none, segments, kernel);
  std::vector<T> joined;
  for (std::int64_t r = 0; r < in.rows(); ++r) {
    joined.insert(joined.end(), head.begin() + r * split, head.begin() + (r + 1) * split);
    joined.insert(joined.end(), tail.begin() + r * (length - split), tail.begin() + (r + 1) * (length - split));
  }
  const double tolerance = dtype == DType::float32 ? kReplayFp32Tolerance : dtype_tolerance(dtype);
  EXPECT_LT(check_mamba_prefill<T>(in, joined.data()).max_rel_error, tolerance) << dtype_name(dtype);
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < joined.size(); ++i) {
    diff = std::fmax(diff, std::fabs(to_float(joined[i]) - to_float(whole[i])));
    scale = std::fmax(scale, std::fabs(to_float(whole[i])));
  }
  EXPECT_LT(diff, tolerance * scale) << dtype_name(dtype);
  // The final h against the reference's.
  const MambaParametersD params = in.reference_parameters();
  double state_diff = 0, state_scale = 0;
  for (std::int64_t b = 0; b < in.batch; ++b) {
    const MambaReferenceResult ref = mamba_selective_scan(in.reference_sequence(b, length), params);
    for (std::int64_t c = 0; c < in.channels; ++c) {
      for (std::int64_t s = 0; s < in.state_size; ++s) {
        const double expected = ref.state(c, s);
        state_diff = std::fmax(state_diff, std::fabs(state[((b * in.channels + c) * in.state_size + s)] - expected));
        state_scale = std::fmax(state_scale, std::fabs(expected));
      }
    }
  }
  EXPECT_GT(state_scale, 0.0);
  EXPECT_LT(state_diff, tolerance * state_scale) << dtype_name(dtype);
}

TEST(MambaScanReplay, ContinuesFromACarriedState) {
  expect_continues_from_a_carried_state<float>(DType::float32);
  expect_continues_from_a_carried_state<bf16>(DType::bfloat16);
}

// The split form from a carried h: the tail's 783 tokens (4 chunks) in 2 and 4 segments, so that
// the carried h enters segment 0 and travels through pass 2 into the later ones.
TEST(MambaScanReplay, SplitContinuesFromACarriedState) {
  for (const std::int64_t segments : {2, 4}) {
    expect_continues_from_a_carried_state<float>(DType::float32, segments);
    expect_continues_from_a_carried_state<bf16>(DType::bfloat16, segments);
  }
}

// Segment counts that divide the 20 chunks of L 5000 and that do not (3: 7 + 7 + 6 chunks; 7:
// 3-chunk segments, the last 2 chunks with a partial one), one chunk per segment, and L 1000's
// 4 chunks with 3 asked (2 segments of 2 chunks: split_mamba_prefill leaves none empty).
struct SplitCase {
  std::int64_t length, segments;
};
constexpr SplitCase kSplitCases[] = {{5000, 2}, {5000, 3}, {5000, 7}, {5000, 20}, {1000, 3}, {1000, 4}};

TEST(MambaScanReplay, SplitMatchesTheFp64ReferenceFp32) {
  for (const SplitCase c : kSplitCases) {
    const MambaInputs in = make_mamba_inputs(replay_cell(DType::float32, 9, 16, 2, c.length), c.length, 59);
    const Accuracy a = replay_against_reference<float>(in, MambaReplayFault::none, c.segments);
    EXPECT_TRUE(a.output_finite);
    EXPECT_EQ(a.rows_checked, 2 * c.length);
    EXPECT_LT(a.max_rel_error, kReplayFp32Tolerance) << "L " << c.length << " segments " << c.segments;
    std::printf("fp32 L %5ld, %2ld segments: max_rel_error %.3g\n", static_cast<long>(c.length),
                static_cast<long>(c.segments), a.max_rel_error);
  }
}

TEST(MambaScanReplay, SplitMatchesTheFp64ReferenceBf16) {
  for (const SplitCase c : kSplitCases) {
    const MambaInputs in = make_mamba_inputs(replay_cell(DType::bfloat16, 9, 16, 2, c.length), c.length, 61);
    const Accuracy a = replay_against_reference<bf16>(in, MambaReplayFault::none, c.segments);
    EXPECT_TRUE(a.output_finite);
    EXPECT_LT(a.max_rel_error, dtype_tolerance(DType::bfloat16)) << "L " << c.length << " segments " << c.segments;
    std::printf("bf16 L %5ld, %2ld segments: max_rel_error %.3g\n", static_cast<long>(c.length),
                static_cast<long>(c.segments), a.max_rel_error);
  }
}

// N 1, 5 and 17 (partial state groups: the map pass stages B alone) and N 256, split in 3.
TEST(MambaScanReplay, SplitMatchesTheFp64ReferenceForOddStateSizes) {
  for (const std::int64_t n : {1, 5, 17, 256}) {
    const MambaInputs in = make_mamba_inputs(replay_cell(DType::float32, 3, n, 1, 1500), 1500, 67);
    EXPECT_LT(replay_against_reference<float>(in, MambaReplayFault::none, 3).max_rel_error, kReplayFp32Tolerance)
        << "N " << n;
  }
}

// Split and unsplit differ only in how h crosses a segment edge (exp2 of the dt sum times h, plus
// the map from zero, against the chain of fmaf): the outputs and final h agree to fp32 rounding.
TEST(MambaScanReplay, SplitEqualsUnsplit) {
  const std::int64_t length = 3000;
  const MambaInputs in = make_mamba_inputs(replay_cell(DType::float32, 9, 16, 2, length), length, 71);
  const std::size_t states = static_cast<std::size_t>(in.rows() * in.state_size);
  std::vector<float> whole_state(states, 0.0f);
  const std::vector<float> whole = replay<float>(in, 0, length, whole_state);
  for (const std::int64_t segments : {2, 5, 12}) {
    std::vector<float> state(states, 0.0f);
    const std::vector<float> split = replay<float>(in, 0, length, state, MambaReplayFault::none, segments);
    double diff = 0, scale = 0, state_diff = 0, state_scale = 0;
    for (std::size_t i = 0; i < whole.size(); ++i) {
      diff = std::fmax(diff, std::fabs(split[i] - whole[i]));
      scale = std::fmax(scale, std::fabs(whole[i]));
    }
    for (std::size_t i = 0; i < states; ++i) {
      state_diff = std::fmax(state_diff, std::fabs(state[i] - whole_state[i]));
      state_scale = std::fmax(state_scale, std::fabs(whole_state[i]));
    }
    EXPECT_LT(diff, 1e-6 * scale) << segments;
    EXPECT_LT(state_diff, 1e-6 * state_scale) << segments;
    std::printf("%2ld segments against unsplit: outputs %.3g, final h %.3g (relative to the largest)\n",
                static_cast<long>(segments), diff / scale, state_diff / state_scale);
  }
}

// The check can fail: without the carry between chunks the outputs past the first chunk are wrong,
// while a sequence of one chunk (from h = 0) is unaffected.
TEST(MambaScanReplay, SkippingTheCarryFailsTheCheckAcrossChunks) {
  const MambaInputs one_chunk = make_mamba_inputs(replay_cell(DType::float32, 9, 16, 1, 256), 256, 47);
  EXPECT_LT(replay_against_reference<float>(one_chunk, MambaReplayFault::carry_skipped).max_rel_error,
            kReplayFp32Tolerance);
  for (const DType dtype : {DType::float32, DType::bfloat16}) {
    const MambaInputs in = make_mamba_inputs(replay_cell(dtype, 9, 16, 1, 1000), 1000, 47);
    const Accuracy faulty = dtype == DType::float32 ? replay_against_reference<float>(in, MambaReplayFault::carry_skipped)
                                                    : replay_against_reference<bf16>(in, MambaReplayFault::carry_skipped);
    EXPECT_GT(faulty.max_rel_error, dtype_tolerance(dtype)) << dtype_name(dtype);
    std::printf("%s without the carry: max_rel_error %.3g\n", dtype_name(dtype).c_str(), faulty.max_rel_error);
  }
}

// The check can fail on the lanes' decay: a fold that decays h by its first item's exp alone, not
// by exp2 of the lane's dt sum (the kernel's one exp per lane and entry), misses the reference.
TEST(MambaScanReplay, ALaneDecayOfOneItemFailsTheCheck) {
  for (const DType dtype : {DType::float32, DType::bfloat16}) {
    const MambaInputs in = make_mamba_inputs(replay_cell(dtype, 9, 16, 1, 1000), 1000, 79);
    const MambaReplayFault fault = MambaReplayFault::lane_decay_from_first_item;
    const Accuracy faulty = dtype == DType::float32 ? replay_against_reference<float>(in, fault)
                                                    : replay_against_reference<bf16>(in, fault);
    const double tolerance = dtype == DType::float32 ? kReplayFp32Tolerance : dtype_tolerance(dtype);
    EXPECT_GT(faulty.max_rel_error, 3 * tolerance) << dtype_name(dtype);
    std::printf("%s with a lane decayed by its first item only: max_rel_error %.3g (tolerance %.3g)\n",
                dtype_name(dtype).c_str(), faulty.max_rel_error, tolerance);
  }
}

// The split check can fail: a pass 2 that starts every segment but the first from h = 0, or that
// carries h across a segment without its decay, misses the reference by at least three times the
// tolerance. From h = 0 the decay first matters at the third segment (h entering the second is
// the first's map from zero whatever its decay), so the counts are 3 (of 3, 3, 2 chunks) and 4.
TEST(MambaScanReplay, DroppingTheSegmentCarryOrDecayFailsTheCheck) {
  for (const DType dtype : {DType::float32, DType::bfloat16}) {
    const MambaInputs in = make_mamba_inputs(replay_cell(dtype, 9, 16, 1, 2000), 2000, 73);
    const double tolerance = dtype == DType::float32 ? kReplayFp32Tolerance : dtype_tolerance(dtype);
    for (const MambaReplayFault fault : {MambaReplayFault::segment_carry_skipped, MambaReplayFault::segment_decay_skipped}) {
      for (const std::int64_t segments : {3, 4}) {
        const Accuracy faulty = dtype == DType::float32 ? replay_against_reference<float>(in, fault, segments)
                                                        : replay_against_reference<bf16>(in, fault, segments);
        EXPECT_GT(faulty.max_rel_error, 3 * tolerance) << dtype_name(dtype) << " segments " << segments;
        std::printf("%s, %ld segments, %s: max_rel_error %.3g (tolerance %.3g)\n", dtype_name(dtype).c_str(),
                    static_cast<long>(segments),
                    fault == MambaReplayFault::segment_carry_skipped ? "segment carry dropped" : "segment decay dropped",
                    faulty.max_rel_error, tolerance);
      }
    }
  }
}


// ---------------------------------------------------------------------------------------------
// The entry kernel (cuda_entry.cu): its replay against the same fp64 reference.

constexpr MambaScanKernel kEntry = MambaScanKernel::entry;

std::string entry_label(std::int64_t n) { return "entry N " + std::to_string(n); }

template <class T>
double entry_tolerance() {
  return std::is_same_v<T, float> ? kReplayFp32Tolerance : dtype_tolerance(DType::bfloat16);
}

// 33 channels (one full block of 32 and one of a single channel); lengths inside a 16-token tile,
// at and across its edges and the chunks'.
template <class T>
void expect_entry_matches_the_reference_at_every_length(DType dtype) {
  for (const std::int64_t n : {16, 8}) {
    const std::int64_t channels = 33;
    for (const std::int64_t length : {1, 7, 15, 16, 17, 255, 257, 1000, 5000}) {
      const MambaInputs in = make_mamba_inputs(replay_cell(dtype, channels, n, 2, length), length, 83);
      const Accuracy a = replay_against_reference<T>(in, MambaReplayFault::none, 1, kEntry);
      EXPECT_TRUE(a.output_finite) << entry_label(n) << " L " << length;
      EXPECT_EQ(a.rows_checked, 2 * length);
      EXPECT_LT(a.max_rel_error, entry_tolerance<T>()) << entry_label(n) << " L " << length;
      if (length == 1 || length == 17 || length == 5000) {
        std::printf("entry replay %s %s L %5ld: max_rel_error %.3g (tolerance %.3g)\n", dtype_name(dtype).c_str(),
                    entry_label(n).c_str(), static_cast<long>(length), a.max_rel_error, entry_tolerance<T>());
      }
    }
  }
}

TEST(MambaEntryReplay, MatchesTheFp64ReferenceAtEveryLengthFp32) {
  expect_entry_matches_the_reference_at_every_length<float>(DType::float32);
}

TEST(MambaEntryReplay, MatchesTheFp64ReferenceAtEveryLengthBf16) {
  expect_entry_matches_the_reference_at_every_length<bf16>(DType::bfloat16);
}

// The split form at N 16 and 8: segments that divide the 20 chunks of L 5000 and that do not, one
// chunk each.
TEST(MambaEntryReplay, SplitMatchesTheFp64Reference) {
  for (const std::int64_t n : {16, 8}) {
    for (const SplitCase c : kSplitCases) {
      const MambaInputs in32 = make_mamba_inputs(replay_cell(DType::float32, 33, n, 2, c.length), c.length, 89);
      const Accuracy a = replay_against_reference<float>(in32, MambaReplayFault::none, c.segments, kEntry);
      EXPECT_LT(a.max_rel_error, kReplayFp32Tolerance) << entry_label(n) << " L " << c.length
                                                       << " segments " << c.segments;
      const MambaInputs in16 = make_mamba_inputs(replay_cell(DType::bfloat16, 33, n, 2, c.length), c.length, 97);
      const Accuracy b = replay_against_reference<bf16>(in16, MambaReplayFault::none, c.segments, kEntry);
      EXPECT_LT(b.max_rel_error, dtype_tolerance(DType::bfloat16)) << entry_label(n) << " L " << c.length
                                                                   << " segments " << c.segments;
      if (c.length == 5000 && c.segments == 20) {
        std::printf("entry replay %s, L 5000 in 20 segments: fp32 %.3g, bf16 %.3g\n", entry_label(n).c_str(),
                    a.max_rel_error, b.max_rel_error);
      }
    }
  }
}

TEST(MambaEntryReplay, ContinuesFromACarriedStateSplitAndUnsplit) {
  for (const std::int64_t segments : {1, 2, 4}) {
    expect_continues_from_a_carried_state<float>(DType::float32, segments, kEntry);
    expect_continues_from_a_carried_state<bf16>(DType::bfloat16, segments, kEntry);
  }
}

// Entry and lane kernels compute the same scan in different orders (a chain of steps per entry
// against folds and a shuffle scan): fp32 outputs and final h agree to rounding.
TEST(MambaEntryReplay, EqualsTheLaneKernel) {
  const std::int64_t length = 3000;
  const MambaInputs in = make_mamba_inputs(replay_cell(DType::float32, 17, 16, 2, length), length, 101);
  const std::size_t states = static_cast<std::size_t>(in.rows() * in.state_size);
  std::vector<float> lane_state(states, 0.0f);
  const std::vector<float> lane = replay<float>(in, 0, length, lane_state);
  for (const std::int64_t segments : {1, 5}) {
    std::vector<float> state(states, 0.0f);
    const std::vector<float> entry = replay<float>(in, 0, length, state, MambaReplayFault::none, segments, kEntry);
    double diff = 0, scale = 0, state_diff = 0, state_scale = 0;
    for (std::size_t i = 0; i < lane.size(); ++i) {
      diff = std::fmax(diff, std::fabs(entry[i] - lane[i]));
      scale = std::fmax(scale, std::fabs(lane[i]));
    }
    for (std::size_t i = 0; i < states; ++i) {
      state_diff = std::fmax(state_diff, std::fabs(state[i] - lane_state[i]));
      state_scale = std::fmax(state_scale, std::fabs(lane_state[i]));
    }
    EXPECT_LT(diff, 2e-6 * scale) << "segments " << segments;
    EXPECT_LT(state_diff, 2e-6 * state_scale) << "segments " << segments;
  }
}

// The checks have power: each fault misses the reference by more than 3x the tolerance, at N 16
// (4 lanes a channel) and N 8 (2).
TEST(MambaEntryReplay, FaultsFailTheCheckByMoreThanThreeTimesTheTolerance) {
  const std::int64_t length = 2000;
  struct Case {
    MambaReplayFault fault;
    std::int64_t segments;
    bool bf16;
    const char* what;
  };
  for (const std::int64_t n : {16, 8}) {
    const MambaInputs in32 = make_mamba_inputs(replay_cell(DType::float32, 33, n, 1, length), length, 103);
    const MambaInputs in16 = make_mamba_inputs(replay_cell(DType::bfloat16, 33, n, 1, length), length, 103);
    for (const Case c : {Case{MambaReplayFault::chain_entry_dropped, 1, false, "an entry left out of a lane's chain"},
                         Case{MambaReplayFault::chain_entry_dropped, 1, true, "an entry left out of a lane's chain"},
                         Case{MambaReplayFault::lane_partial_dropped, 1, false, "a lane's partial dropped"},
                         Case{MambaReplayFault::lane_partial_dropped, 1, true, "a lane's partial dropped"},
                         Case{MambaReplayFault::lane_partial_dropped, 4, true, "a lane's partial dropped, split"},
                         Case{MambaReplayFault::reduction_token_skipped, 1, false, "a token skipped in the reduction"},
                         Case{MambaReplayFault::reduction_token_skipped, 1, true, "a token skipped in the reduction"},
                         Case{MambaReplayFault::segment_carry_skipped, 4, false, "segment carry dropped"},
                         Case{MambaReplayFault::segment_carry_skipped, 4, true, "segment carry dropped"},
                         Case{MambaReplayFault::segment_decay_skipped, 4, false, "segment decay dropped"}}) {
      const Accuracy faulty = c.bf16 ? replay_against_reference<bf16>(in16, c.fault, c.segments, MambaScanKernel::entry)
                                     : replay_against_reference<float>(in32, c.fault, c.segments, MambaScanKernel::entry);
      const double tolerance = c.bf16 ? dtype_tolerance(DType::bfloat16) : kReplayFp32Tolerance;
      EXPECT_GT(faulty.max_rel_error, 3 * tolerance) << c.what << (c.bf16 ? " bf16" : " fp32") << " N " << n;
      std::printf("entry replay N %ld %s, %s: max_rel_error %.3g (tolerance %.3g, ratio %.0f)\n", static_cast<long>(n),
                  c.bf16 ? "bf16" : "fp32", c.what, faulty.max_rel_error, tolerance, faulty.max_rel_error / tolerance);
    }
  }
}

}  // namespace
}  // namespace arch_bench
