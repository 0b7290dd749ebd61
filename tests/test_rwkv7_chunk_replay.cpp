// The arithmetic of RWKV-7's chunkwise tensor-core prefill (rwkv7/chunk_replay.hpp: the kernels' chunks,
// factorised decays and bf16 roundings, replayed on the CPU) against the fp64 recurrent reference
// over head sizes 16..128, lengths around the 32-token chunk and up to 600, strong and weak decays
// and a carried state; and deliberately faulty replays that the same comparison must reject.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_replay.hpp"
#include "mechanisms/rwkv/rwkv7/reference.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/decay_extremes.hpp"
#include "support/chunk_replay_errors.hpp"

namespace arch_bench {
namespace {

const double kBf16Tolerance = dtype_tolerance(DType::bfloat16);

// One problem: bf16-representable inputs of every head (as the bf16 cells draw them), the fp64
// reference and the replay.
struct ChunkProblem {
  ChunkProblem(std::int64_t heads, std::int64_t dim, std::int64_t tokens, std::uint64_t seed = 7)
      : in(make_rwkv_inputs(testing::mechanism_cell("rwkv7", heads, dim, tokens, DType::bfloat16), tokens, seed,
                            RwkvVersion::v7)) {}

  // w_raw of every token and channel replaced by draws (rounded to bf16, as the kernel reads it).
  template <class Draw>
  void redraw_decays(Draw draw) {
    for (float& w : in.sequence[kRwkvDecay]) w = round_through<bf16>(draw());
  }

  RwkvMatrixResult reference(std::int64_t bh) const {
    const std::int64_t n = in.tokens;
    return rwkv7_reference(in.head_matrix(kRwkvR, bh, n), in.head_matrix(kRwkvDecay, bh, n),
                           in.head_matrix(kRwkvK, bh, n), in.head_matrix(kRwkvV, bh, n),
                           in.head_matrix(kRwkvKappa, bh, n), in.head_matrix(kRwkvIclr, bh, n));
  }

  using Errors = testing::ReplayErrors;
  // The replay's errors against fp64 (outputs, and final states: H [key][value] against the
  // reference's S [value][key]), the tokens replayed in pieces cut at `cuts`.
  Errors against_reference(Rwkv7ChunkFault fault = Rwkv7ChunkFault::none, std::vector<std::int64_t> cuts = {}) const {
    return testing::chunk_replay_errors(
        in.batch_heads, in.tokens, in.dim, std::move(cuts), /*transposed_state=*/true,
        [&](std::int64_t bh, std::int64_t first, std::int64_t count, std::vector<float>& state) {
          std::vector<float> piece(static_cast<std::size_t>(count * in.dim));
          auto at = [&](RwkvInput input) { return in.at(input, bh, first); };
          rwkv7_chunk_replay(static_cast<int>(in.dim), count, at(kRwkvR), at(kRwkvDecay), at(kRwkvK), at(kRwkvV),
                             at(kRwkvKappa), at(kRwkvIclr), state.data(), piece.data(), fault);
          return piece;
        },
        [&](std::int64_t bh) { return reference(bh); });
  }

  RwkvInputs in;
};

void expect_within(const ChunkProblem::Errors& e, const std::string& where) {
  EXPECT_LT(e.output, kBf16Tolerance) << where;
  EXPECT_LT(e.state, kBf16Tolerance) << where;
}

TEST(Rwkv7ChunkReplay, MatchesTheFp64ReferenceOverHeadSizesAndLengths) {
  double worst_output = 0, worst_state = 0;
  for (const std::int64_t dim : {16, 32, 48, 64, 96, 128}) {
    for (const std::int64_t tokens : {1, 31, 32, 33, 100, 600}) {
      if (dim > 64 && tokens == 600) continue;  // the largest cases below, once each
      const ChunkProblem p(2, dim, tokens);
      const auto e = p.against_reference();
      expect_within(e, "d " + std::to_string(dim) + " L " + std::to_string(tokens));
      worst_output = std::max(worst_output, e.output);
      worst_state = std::max(worst_state, e.state);
    }
  }
  for (const std::int64_t dim : {96, 128}) {
    const ChunkProblem p(1, dim, 600);
    const auto e = p.against_reference();
    expect_within(e, "d " + std::to_string(dim) + " L 600");
    worst_output = std::max(worst_output, e.output);
    worst_state = std::max(worst_state, e.state);
  }
  std::printf("replay vs fp64, worst over d 16..128, L 1..600: outputs %.3g, state %.3g\n", worst_output,
              worst_state);
}

TEST(Rwkv7ChunkReplay, StaysAccurateWithStrongAndWeakDecays) {
  // Strong: w_raw >= 6, w = exp(-e^{-0.5} sigmoid(w_raw)) ~ e^{-0.6}, the strongest RWKV-7 allows, so
  // a chunk's decay e_last ~ e^{-19.4} and 1 / e_t ~ 2.7e8 (the factorised columns at their largest);
  // weak: w_raw = -12, w = 1 - 4e-6, the state barely decays and grows with L; mixed: both in one chunk.
  testing::expect_accurate_with_strong_weak_and_mixed_decays<ChunkProblem>(6.0f, 12.0f, -12.0f, -12.0f, 12.0f);
}

TEST(Rwkv7ChunkReplay, ContinuesFromACarriedState) {
  // Cuts inside a chunk and at chunk boundaries: each piece starts from the state the last left, so
  // the chunks of a piece are aligned to its own first token, not to the sequence's.
  const ChunkProblem p(2, 64, 400);
  expect_within(p.against_reference(Rwkv7ChunkFault::none, {7, 32, 70, 71, 250}), "cut at 7, 32, 70, 71, 250");
}

TEST(Rwkv7ChunkReplay, FaultyReplaysFail) {
  // The comparison must catch each mistake: the a^T b (removal) term dropped, and a token's own decay
  // applied before its removal (A^ = a e_t for a e_{t-1}). Strong decays (w ~ e^{-0.6}), where the
  // latter moves the removed value by a factor 0.55, far more than bf16's rounding.
  ChunkProblem p(2, 64, 200);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> strong(4.0f, 10.0f);
  p.redraw_decays([&] { return strong(rng); });
  EXPECT_LT(p.against_reference().output, kBf16Tolerance) << "the correct replay passes on these inputs";
  const double dropped = p.against_reference(Rwkv7ChunkFault::delta_dropped).output;
  const double shifted = p.against_reference(Rwkv7ChunkFault::decay_off_by_one).output;
  EXPECT_GT(dropped, 3 * kBf16Tolerance);
  EXPECT_GT(shifted, 3 * kBf16Tolerance);
  std::printf("faulty replays: removal dropped %.3g, decay off by one %.3g\n", dropped, shifted);
}

}  // namespace
}  // namespace arch_bench
