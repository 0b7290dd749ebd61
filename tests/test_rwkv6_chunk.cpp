// RWKV-6's chunkwise tensor-core prefill on the CPU (no GPU here): the launch plan
// (rwkv6/chunk_plan.hpp: which cells take it, shared memory, workspace, grids and index maps) and
// the replay of the kernels' arithmetic (rwkv6/chunk_replay.hpp: the same chunks and bf16
// roundings) against the fp64 recurrent reference, with deliberately faulty replays that must fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_plan.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_replay.hpp"
#include "mechanisms/rwkv/rwkv6/reference.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/decay_extremes.hpp"
#include "support/chunk_replay_errors.hpp"

namespace arch_bench {
namespace {

constexpr std::size_t kSharedOptInLimit = 227 * 1024;  // an sm_90 block's dynamic shared memory, opted in
const double kBf16Tolerance = dtype_tolerance(DType::bfloat16);

Cell rwkv6_cell(std::int64_t heads, std::int64_t dim, std::int64_t length, DType dtype = DType::bfloat16,
                Phase phase = Phase::prefill) {
  return testing::mechanism_cell("rwkv6", heads, dim, length, dtype, phase);
}

TEST(Rwkv6ChunkPlan, TakesHeadDimsThatAreMultiplesOf16UpTo128) {
  for (std::int64_t dim = 0; dim <= 300; ++dim) {
    EXPECT_EQ(rwkv6_chunk_supports(dim), dim >= 16 && dim <= 128 && dim % 16 == 0) << dim;
  }
  EXPECT_THROW(plan_rwkv6_chunk(1, 1, 10, 100), std::invalid_argument);
  EXPECT_THROW(plan_rwkv6_chunk(-1, 1, 10, 64), std::invalid_argument);
  EXPECT_THROW(plan_rwkv6_chunk(1, 1, -1, 64), std::invalid_argument);
}

TEST(Rwkv6ChunkPlan, OnlyBf16PrefillCellsRunChunkwise) {
  EXPECT_TRUE(rwkv6_cuda_prefill_is_chunked(rwkv6_cell(4, 64, 100)));
  EXPECT_FALSE(rwkv6_cuda_prefill_is_chunked(rwkv6_cell(4, 64, 100, DType::float32)));
  EXPECT_FALSE(rwkv6_cuda_prefill_is_chunked(rwkv6_cell(4, 64, 100, DType::bfloat16, Phase::decode)));
  EXPECT_FALSE(rwkv6_cuda_prefill_is_chunked(rwkv6_cell(4, 100, 100)));  // the recurrence takes odd heads
  EXPECT_FALSE(rwkv6_cuda_prefill_is_chunked(rwkv6_cell(4, 256, 100)));
  EXPECT_EQ(rwkv6_cuda_workspace_bytes(rwkv6_cell(4, 64, 100, DType::float32)), 0);
  EXPECT_EQ(rwkv6_cuda_workspace_bytes(rwkv6_cell(4, 64, 100, DType::bfloat16, Phase::decode)), 0);
}

// sm_90: 228 KiB of shared memory per SM, each resident block taking 1 KiB more for the runtime.
int blocks_per_sm(std::size_t bytes) { return static_cast<int>(std::size_t{228} * 1024 / (bytes + 1024)); }

// (offset, bytes) regions that must not overlap (each 128-aligned, in any order).
void expect_disjoint_aligned(std::vector<std::pair<std::size_t, std::size_t>> regions, std::size_t total,
                             std::int64_t dim) {
  std::sort(regions.begin(), regions.end());
  std::size_t end = 0;
  for (const auto& [offset, bytes] : regions) {
    EXPECT_EQ(offset % 128, 0u) << dim;
    EXPECT_GE(offset, end) << dim;
    end = offset + bytes;
  }
  EXPECT_LE(end, total) << dim;
}

TEST(Rwkv6ChunkPlan, SharedMemoryRegionsAreAlignedDisjointWhileLiveAndFitTheOptInLimit) {
  for (std::int64_t dim = 16; dim <= kRwkv6ChunkMaxDim; dim += 16) {
    const Rwkv6ChunkPlan plan = plan_rwkv6_chunk(3, 3, 100, dim);
    // Past 48 KiB the kernels are opted in (configure_rwkv6_chunked); an H100/H200 block takes 227.
    EXPECT_LE(plan.max_shared_bytes(), kSharedOptInLimit) << dim;
    const std::size_t C = kRwkv6ChunkTokens, D = static_cast<std::size_t>(dim), subs = kRwkv6ChunkSubs;
    const std::size_t stage = 8 * 16 * 16 * 4, rows = C * plan.ld_bf16 * 2;
    const auto& s = plan.state_layout;
    const auto& o = plan.output_layout;
    // Kernel (1): beta (building K~), then the staging tiles in its place (the U tiles).
    EXPECT_EQ(s.stage, s.beta);
    expect_disjoint_aligned({{s.beta, C * D * 4}, {s.totals, subs * D * 4}, {s.k, rows}, {s.v, rows}}, s.bytes, dim);
    expect_disjoint_aligned({{s.stage, stage}, {s.totals, subs * D * 4}, {s.k, rows}, {s.v, rows}}, s.bytes, dim);
    // Kernel (3), the regions live in each phase: (a)-(c) r, k, beta, totals, u, Q~, far keys, P;
    // (d)-(e) r (R^), k (adjacent K^), V and the staging tiles (in beta's place), Q~, far keys, P.
    const std::size_t q_rows = 48 * plan.ld_bf16 * 2, far_rows = 48 * plan.ld_bf16 * 2, p_rows = C * plan.ld_p * 2;
    expect_disjoint_aligned({{o.r, rows},
                             {o.k, rows},
                             {o.beta, C * plan.ld_beta * 4},
                             {o.totals, subs * D * 4},
                             {o.u, D * 4},
                             {o.q_local, q_rows},
                             {o.far_keys, far_rows},
                             {o.p, p_rows}},
                            o.bytes, dim);
    expect_disjoint_aligned({{o.r, rows},
                             {o.k, rows},
                             {o.v, rows},
                             {o.stage, stage},
                             {o.q_local, q_rows},
                             {o.far_keys, far_rows},
                             {o.p, p_rows}},
                            o.bytes, dim);
    // V and the staging tiles lie inside beta's region (nothing else is overwritten by (d)).
    const std::size_t beta_end = std::min({o.totals, o.u, o.q_local, o.far_keys, o.p, o.bytes});
    EXPECT_GE(o.v, o.beta) << dim;
    EXPECT_LE(o.stage + stage, beta_end) << dim;
    EXPECT_GE(o.k, o.r + rows) << dim;
    EXPECT_GE(o.beta, o.k + rows) << dim;
    // wmma: leading dimensions a multiple of 8 bf16 elements (r, k, Q~, K^, V, P and the states in
    // global memory, whose rows are dim long); a 16-row step of them 32-byte aligned.
    EXPECT_EQ(plan.ld_bf16 % 8, 0);
    EXPECT_EQ(plan.ld_p % 8, 0);
    EXPECT_EQ(plan.dim % 8, 0);
    EXPECT_EQ(16 * plan.ld_bf16 * 2 % 32, 0);
    EXPECT_EQ(16 * plan.ld_p * 2 % 32, 0);
    // The diagonal scores read 16 bytes of k (bf16) and of beta (fp32) at one channel from the rows of
    // eight consecutive key tokens s (a quarter warp, which one shared-memory wavefront serves): the
    // eight fall in eight different 16-byte bank groups of the 128-byte bank row, and every read is
    // 16-byte aligned.
    for (const std::size_t stride : {std::size_t(plan.ld_bf16) * 2, std::size_t(plan.ld_beta) * 4}) {
      EXPECT_EQ(stride % 16, 0u) << dim;
      for (int first = 0; first < kRwkv6ChunkTokens; first += 8) {
        std::set<std::size_t> groups;
        for (int token = first; token < first + 8; ++token) groups.insert(token * stride % 128 / 16);
        EXPECT_EQ(groups.size(), 8u) << dim << " stride " << stride;
      }
    }
    EXPECT_EQ(o.beta % 16, 0u);
  }
  // Issue 41's residency targets on sm_90: three output blocks per SM at d 64, two at d 128.
  const Rwkv6ChunkPlan d64 = plan_rwkv6_chunk(1, 1, 100, 64), d128 = plan_rwkv6_chunk(1, 1, 100, 128);
  EXPECT_GE(blocks_per_sm(d64.output_layout.bytes), 3);
  EXPECT_GE(blocks_per_sm(d128.output_layout.bytes), 2);
  EXPECT_GE(blocks_per_sm(d128.state_layout.bytes), 3);
  std::printf("shared memory: state %.2f / output %.2f KiB at d 64 (%d / %d blocks per SM), "
              "%.2f / %.2f KiB at d 128 (%d / %d)\n",
              d64.state_layout.bytes / 1024.0, d64.output_layout.bytes / 1024.0, blocks_per_sm(d64.state_layout.bytes),
              blocks_per_sm(d64.output_layout.bytes), d128.state_layout.bytes / 1024.0,
              d128.output_layout.bytes / 1024.0, blocks_per_sm(d128.state_layout.bytes),
              blocks_per_sm(d128.output_layout.bytes));
}

TEST(Rwkv6ChunkPlan, OffDiagonalBlocksAndTheirKeyTilesCoverTheLowerBlockTriangle) {
  // The six blocks are every (I, J) with J < I once, in order. The adjacent blocks' keys lie over k's
  // rows of their own key sub-chunk J (so the thread that read k_s writes K^(J+1)_s); the far blocks'
  // keys fill the three tiles of the far-key region, each once.
  std::set<std::pair<int, int>> seen;
  std::set<int> far_rows;
  int previous = -1;
  for (int block = 0; block < kRwkv6ChunkOffDiagonalBlocks; ++block) {
    const Rwkv6ChunkBlock ij = rwkv6_chunk_off_diagonal_block(block);
    EXPECT_LT(ij.key_sub, ij.query_sub);
    EXPECT_GE(ij.key_sub, 0);
    EXPECT_LT(ij.query_sub, kRwkv6ChunkSubs);
    EXPECT_GT(ij.query_sub * kRwkv6ChunkSubs + ij.key_sub, previous);
    previous = ij.query_sub * kRwkv6ChunkSubs + ij.key_sub;
    seen.insert({ij.query_sub, ij.key_sub});
    const Rwkv6ChunkKeyTile tile = rwkv6_chunk_key_tile(ij.query_sub, ij.key_sub);
    EXPECT_EQ(tile.over_k, ij.query_sub == ij.key_sub + 1);
    if (tile.over_k) {
      EXPECT_EQ(tile.row, ij.key_sub * kRwkv6ChunkSubTokens);
    } else {
      EXPECT_EQ(tile.row % kRwkv6ChunkSubTokens, 0);
      EXPECT_GE(tile.row, 0);
      EXPECT_LE(tile.row + kRwkv6ChunkSubTokens, kRwkv6ChunkFarKeyRows);
      EXPECT_TRUE(far_rows.insert(tile.row).second) << "two far blocks share a tile";
    }
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(static_cast<int>(far_rows.size()) * kRwkv6ChunkSubTokens, kRwkv6ChunkFarKeyRows);
  EXPECT_EQ(kRwkv6ChunkQueryRows, (kRwkv6ChunkSubs - 1) * kRwkv6ChunkSubTokens);  // Q~ of sub-chunks 1..3
}

TEST(Rwkv6ChunkPlan, GridsAndWorkspaceCoverEveryHeadAndChunk) {
  for (const std::int64_t tokens : {0, 1, 15, 16, 17, 63, 64, 65, 1000, 8192}) {
    for (const std::int64_t dim : {16, 64, 128}) {
      const std::int64_t bh = 6;
      const Rwkv6ChunkPlan plan = plan_rwkv6_chunk(bh, 3, tokens, dim);
      EXPECT_EQ(plan.chunks, (tokens + 63) / 64);
      EXPECT_EQ(plan.state_blocks, bh * plan.chunks);
      EXPECT_EQ(plan.output_blocks, bh * plan.chunks);
      EXPECT_GE(plan.prefix_blocks_per_head * plan.threads * 2, dim * dim);  // one thread per pair of S
      EXPECT_LT((plan.prefix_blocks_per_head - 1) * plan.threads * 2, dim * dim);
      EXPECT_EQ(plan.prefix_blocks, bh * plan.prefix_blocks_per_head);
      EXPECT_EQ(plan.workspace_state_elements * 2, bh * plan.chunks * dim * dim);
      EXPECT_EQ(plan.workspace_decay_elements, bh * plan.chunks * dim);
      EXPECT_EQ(plan.workspace_bytes(), 4 * plan.workspace_floats());
      // The chunks' rows cover the tokens once; every (head, chunk) has its own state and decay slot.
      std::int64_t covered = 0;
      for (std::int64_t c = 0; c < plan.chunks; ++c) {
        const int rows = rwkv6_chunk_rows(tokens, c);
        EXPECT_GE(rows, 1);
        EXPECT_LE(rows, kRwkv6ChunkTokens);
        covered += rows;
      }
      EXPECT_EQ(covered, tokens);
      for (std::int64_t h = 0; h < bh; ++h) {
        for (std::int64_t c = 0; c < plan.chunks; ++c) {
          EXPECT_EQ(rwkv6_chunk_state_offset(plan, h, c), (h * plan.chunks + c) * dim * dim);
          EXPECT_EQ(rwkv6_chunk_decay_offset(plan, h, c), (h * plan.chunks + c) * dim);
        }
      }
      if (plan.chunks > 0) {
        EXPECT_EQ(rwkv6_chunk_state_offset(plan, bh - 1, plan.chunks - 1) + dim * dim,
                  2 * plan.workspace_state_elements);
      }
    }
  }
}

TEST(Rwkv6ChunkPlan, MechanismCountsTheWorkspaceAndRefusesOversizedGrids) {
  const Mechanism* rwkv6 = find_mechanism("rwkv6");
  ASSERT_NE(rwkv6, nullptr);
  const Cell bf16_cell = rwkv6_cell(8, 64, 1000), fp32_cell = rwkv6_cell(8, 64, 1000, DType::float32);
  const std::int64_t workspace = rwkv6_cuda_workspace_bytes(bf16_cell);
  EXPECT_EQ(workspace, plan_rwkv6_chunk(8, 8, 1000, 64).workspace_bytes());
  EXPECT_GT(workspace, 0);
  EXPECT_EQ(rwkv6->predicted_peak_bytes(bf16_cell) - workspace,
            rwkv6->predicted_peak_bytes(fp32_cell) - 5 * 8 * 1000 * 64 * 2) << "bf16 streams are half of fp32's";
  Cell huge = bf16_cell;
  huge.sequence_length = std::int64_t{1} << 35;  // 2^29 chunks of 64 x 8 heads: past gridDim.x
  const auto why = rwkv6->unsupported_on(huge, "cuda");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("grid"), std::string::npos) << *why;
  huge.dtype = DType::float32;  // the recurrence's grid does not grow with L
  EXPECT_FALSE(rwkv6->unsupported_on(huge, "cuda"));
}

// One problem: bf16-representable inputs of every head, the fp64 reference and the replay.
struct ChunkProblem {
  ChunkProblem(std::int64_t heads, std::int64_t dim, std::int64_t tokens, std::uint64_t seed = 7)
      : in(make_rwkv_inputs(rwkv6_cell(heads, dim, tokens), tokens, seed, RwkvVersion::v6)) {}

  // d of every token and channel replaced by draws of `spread` (rounded to bf16, as the kernel reads it).
  template <class Draw>
  void redraw_decays(Draw draw) {
    for (float& d : in.sequence[kRwkvDecay]) d = round_through<bf16>(draw());
  }

  RwkvMatrixResult reference(std::int64_t bh) const {
    return rwkv6_reference(in.head_matrix(kRwkvR, bh, in.tokens), in.head_matrix(kRwkvK, bh, in.tokens),
                           in.head_matrix(kRwkvV, bh, in.tokens), in.head_matrix(kRwkvDecay, bh, in.tokens),
                           in.parameter(in.u, bh));
  }

  // The replay over tokens [first, first + count) of head bh from `state`; returns out [count][dim].
  std::vector<float> replay(std::int64_t bh, std::int64_t first, std::int64_t count, std::vector<float>& state,
                            Rwkv6ChunkFault fault = Rwkv6ChunkFault::none) const {
    std::vector<float> out(static_cast<std::size_t>(count * in.dim));
    auto at = [&](RwkvInput input) { return in.at(input, bh, first); };
    rwkv6_chunk_replay(static_cast<int>(in.dim), count, at(kRwkvR), at(kRwkvK), at(kRwkvV), at(kRwkvDecay),
                       in.u.data() + (bh % in.heads) * in.dim, state.data(), out.data(), fault);
    return out;
  }

  // The replay's errors against fp64 (outputs and final states of every head), the tokens replayed in
  // pieces cut at `cuts`.
  testing::ReplayErrors against_reference(Rwkv6ChunkFault fault = Rwkv6ChunkFault::none,
                                          std::vector<std::int64_t> cuts = {}) const {
    return testing::chunk_replay_errors(
        in.batch_heads, in.tokens, in.dim, std::move(cuts), /*transposed_state=*/false,
        [&](std::int64_t bh, std::int64_t first, std::int64_t count, std::vector<float>& state) {
          return replay(bh, first, count, state, fault);
        },
        [&](std::int64_t bh) { return reference(bh); });
  }

  RwkvInputs in;
};

TEST(Rwkv6ChunkReplay, MatchesTheFp64ReferenceOverHeadSizesAndLengths) {
  for (const std::int64_t dim : {16, 32, 64, 128}) {
    for (const std::int64_t tokens : {1, 15, 16, 17, 63, 64, 65, 100, 1000}) {
      if (dim == 128 && tokens == 1000) continue;  // the largest case below, once
      const ChunkProblem p(2, dim, tokens);
      const auto e = p.against_reference();
      EXPECT_LT(e.output, kBf16Tolerance) << "d " << dim << " L " << tokens;
      EXPECT_LT(e.state, kBf16Tolerance) << "d " << dim << " L " << tokens;
    }
  }
  const ChunkProblem p(1, 128, 1000);
  const auto e = p.against_reference();
  EXPECT_LT(e.output, kBf16Tolerance);
  EXPECT_LT(e.state, kBf16Tolerance);
  std::printf("d 128 L 1000: replay vs fp64 outputs %.3g, state %.3g\n", e.output, e.state);
}

TEST(Rwkv6ChunkReplay, StaysFiniteAndAccurateWithStrongAndWeakDecays) {
  // Strong: d up to 6, log w = -e^6 = -403 clamped at -100, so a sub-chunk's cumulative log-decay
  // reaches -1600 and a chunk's -6400 (exp(-beta) would overflow past 88: the kernels never take it);
  // weak: d = -12, w = 1 - 6e-6, the state barely decays and grows with L; mixed: both in one chunk,
  // channel by channel.
  testing::expect_accurate_with_strong_weak_and_mixed_decays<ChunkProblem>(2.0f, 6.0f, -12.0f, -12.0f, 6.0f);
}

TEST(Rwkv6ChunkReplay, ContinuesFromACarriedState) {
  // Cuts inside a sub-chunk, at sub-chunk and at chunk boundaries: each piece starts from the state
  // the last left, so the chunks of a piece are aligned to its own first token, not to the sequence's.
  const ChunkProblem p(2, 64, 300);
  const auto e = p.against_reference(Rwkv6ChunkFault::none, {7, 16, 64, 70, 71, 135, 200});
  EXPECT_LT(e.output, kBf16Tolerance);
  EXPECT_LT(e.state, kBf16Tolerance);
}

TEST(Rwkv6ChunkReplay, FaultyReplaysFail) {
  // The comparison must catch each mistake: the bonus term dropped; the decay applied one token early
  // (beta_t for beta_{t-1}); the off-diagonal sub-chunk blocks dropped; their key factor taken to the
  // wrong boundary (the chunk's end, as the state's K~); the decay of the whole sub-chunks between
  // query and key left out; the key not decayed at all; kernel (3)'s in-place regions read in the
  // wrong phase (Q~ from R^, the diagonal scores from the adjacent blocks' K^). Decays of 0.8 to 6
  // nats per sub-chunk (w about 0.7 to 0.95), where the blocks two and three sub-chunks apart still
  // weigh, so each mistake changes the output by far more than bf16's rounding.
  ChunkProblem p(2, 32, 150);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> moderate(-3.0f, -1.0f);
  p.redraw_decays([&] { return moderate(rng); });
  EXPECT_LT(p.against_reference().output, kBf16Tolerance) << "the correct replay passes on these inputs";
  const std::pair<Rwkv6ChunkFault, const char*> faults[] = {
      {Rwkv6ChunkFault::bonus_dropped, "bonus dropped"},
      {Rwkv6ChunkFault::decay_off_by_one, "decay off by one"},
      {Rwkv6ChunkFault::off_diagonal_dropped, "off-diagonal blocks dropped"},
      {Rwkv6ChunkFault::boundary_wrong, "key factor to the wrong boundary"},
      {Rwkv6ChunkFault::between_dropped, "decay between sub-chunks dropped"},
      {Rwkv6ChunkFault::key_unscaled, "key unscaled"},
      {Rwkv6ChunkFault::query_after_r_decayed, "Q~ read after R^ overwrote r"},
      {Rwkv6ChunkFault::diagonal_after_keys, "diagonal read after K^ overwrote k"}};
  for (const auto& [fault, name] : faults) {
    const double error = p.against_reference(fault).output;
    // Each fails the tolerance the correct replay meets, by a margin.
    EXPECT_GT(error, 3 * kBf16Tolerance) << name;
    std::printf("faulty replay, %s: %.3g\n", name, error);
  }
}

}  // namespace
}  // namespace arch_bench
