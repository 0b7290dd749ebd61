// The chunkwise delta-rule prefill's launch planning (mechanisms/common/chunk_delta_rule_plan.hpp),
// on the CPU: chunk counts and tail rows; the grids the two kernels decode and the pass's value
// tile; shared-memory layouts that fit sm_90, do not overlap, keep every wmma tile pointer 32-byte
// aligned and every 16-byte copy aligned; a workspace exactly as large as the kernels index (the
// prepare kernel's writes and the pass kernel's reads replayed here); and gated_deltanet's dispatch,
// workspace and peak prediction.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "mechanisms/common/chunk_delta_rule_plan.hpp"
#include "mechanisms/common/chunk_pass_occupancy.hpp"
#include "mechanisms/gated_deltanet/cuda_plan.hpp"
#include "mechanisms/registry.hpp"
#include "support/chunk_layout_checks.hpp"
#include "support/delta_rule_pass_layout_checks.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

using namespace testing;  // the chunk-plan checks (chunk_layout_checks.hpp) and mechanism_cell

constexpr int kC = kDeltaRuleChunk;

TEST(ChunkDeltaRulePlan, ChunksCoverEveryTokenOnceWithAShortTail) {
  for (const std::int64_t tokens : {1, 2, 63, 64, 65, 127, 128, 300, 1000, 8192}) {
    const ChunkDeltaRulePlan plan = plan_chunk_delta_rule(3, tokens, 64, 64, 132);
    expect_chunks_cover_tokens(tokens, plan.chunks, kC, delta_rule_chunk_rows);
  }
  const ChunkDeltaRulePlan empty = plan_chunk_delta_rule(2, 0, 64, 64, 132);
  EXPECT_EQ(empty.chunks, 0);
  EXPECT_EQ(empty.prepare_blocks, 0);
  EXPECT_EQ(empty.workspace_bytes(), 0);
}

TEST(ChunkDeltaRulePlan, ValueTileDividesTheHeadAndCostsTheLeastOfTheWidths) {
  for (const int dk : {16, 64, 128}) {
    for (int dv = 16; dv <= kDeltaRuleMaxDim; dv += 16) {
      for (const std::int64_t bh : {1, 8, 128, 1024}) {
        for (const int sms : {0, 1, 132}) {
          const ChunkDeltaRulePlan plan = plan_chunk_delta_rule(bh, 300, dk, dv, sms);
          EXPECT_EQ(plan.value_tile % 16, 0);
          EXPECT_EQ(dv % plan.value_tile, 0) << dv;
          EXPECT_EQ(plan.value_tiles * plan.value_tile, dv);
          EXPECT_EQ(plan.pass_blocks, bh * plan.value_tiles);
          EXPECT_EQ(plan.prepare_blocks, bh * plan.chunks);
          const std::int64_t cost =
              chunk_delta_rule_pass_cost(bh, dk, dv, plan.value_tile, plan.pass_blocks_per_sm, sms);
          for (const int other : kDeltaRuleValueTiles) {
            if (other == plan.value_tile || dv % other != 0) continue;
            if (sms <= 0) {
              EXPECT_LT(other, plan.value_tile) << "no device: the widest tile dividing dv";
              continue;
            }
            // Every other width costs more, or as much and is narrower (re-reads the operands more).
            const int per_sm = chunk_delta_rule_pass_blocks_per_sm(chunk_delta_rule_pass_layout(dk, other).bytes);
            const std::int64_t other_cost = chunk_delta_rule_pass_cost(bh, dk, dv, other, per_sm, sms);
            EXPECT_TRUE(other_cost > cost || (other_cost == cost && other < plan.value_tile))
                << dk << " x " << dv << " bh " << bh << " sms " << sms << ": " << other << " vs " << plan.value_tile;
          }
        }
      }
    }
  }
}

TEST(ChunkDeltaRulePlan, TheTargetShapeTakesThirtyTwoColumnTilesTwoBlocksPerSmInOneWave) {
  // B16 H8 d64 on an H200's 132 SMs: 128 heads. 32-column tiles: 256 pass blocks, 110 KiB each with
  // the double buffer, two per SM (2 x 111 KiB <= 228 KiB): 264 places, one wave, one output tile
  // per warp. 16 columns would take two waves (512 blocks), 64 two tiles per warp.
  const ChunkDeltaRulePlan plan = plan_chunk_delta_rule(128, 8192, 64, 64, 132);
  EXPECT_EQ(plan.value_tile, 32);
  EXPECT_EQ(plan.pass_blocks, 256);
  EXPECT_EQ(plan.pass_layout.bytes, 112640u);
  EXPECT_EQ(plan.pass_blocks_per_sm, 2);
  // A warp's chain per chunk at 32 columns: W S_c 4 steps, Q~ S_c + P V' 8, K~^T V' 4 (one output
  // tile each); at 16 the same chain in two waves; at 64 two tiles per warp in each product.
  EXPECT_EQ(chunk_delta_rule_pass_cost(128, 64, 64, 32, 2, 132), 16);
  EXPECT_EQ(chunk_delta_rule_pass_cost(128, 64, 64, 16, 2, 132), 32);
  EXPECT_EQ(chunk_delta_rule_pass_cost(128, 64, 64, 64, 1, 132), 32);
  EXPECT_EQ(plan_chunk_delta_rule(128, 32768, 64, 64, 132).value_tile, 32) << "the length does not change it";
  // d128: every tile's double buffer leaves one block per SM; 64 columns (2 waves x 56 steps) ties
  // 32 (4 x 28) and reads the operands half as often.
  const ChunkDeltaRulePlan wide = plan_chunk_delta_rule(128, 8192, 128, 128, 132);
  EXPECT_EQ(wide.value_tile, 64);
  EXPECT_EQ(wide.pass_blocks_per_sm, 1);
  EXPECT_EQ(chunk_delta_rule_pass_cost(128, 128, 128, 64, 1, 132), 112);
  EXPECT_EQ(chunk_delta_rule_pass_cost(128, 128, 128, 32, 1, 132), 112);
  EXPECT_EQ(plan_chunk_delta_rule(1, 96, 64, 96, 0).value_tile, 32) << "no device: the widest dividing dv";
}

TEST(ChunkDeltaRulePlan, EveryTileOfEveryKeyWidthDoubleBuffersInsideTheOptInLimit) {
  for (int dk = 16; dk <= kDeltaRuleMaxDim; dk += 16) {
    for (const int tile : kDeltaRuleValueTiles) {
      const DeltaRulePassLayout layout = chunk_delta_rule_pass_layout(dk, tile);
      expect_pass_layout_double_buffered(dk, tile, chunk_delta_rule_pass_operands(dk, tile), layout);
      EXPECT_GE(chunk_delta_rule_pass_blocks_per_sm(layout.bytes), 1);
    }
  }
  // The largest: dk 128 with 64-column tiles, 216 KiB (one block per SM).
  EXPECT_EQ(chunk_delta_rule_pass_layout(128, 64).bytes, 221184u);
  // d64: 94 KiB at 16 columns, 110 KiB at 32, 142 KiB at 64 (two, two and one per SM).
  EXPECT_EQ(chunk_delta_rule_pass_layout(64, 16).bytes, 96256u);
  EXPECT_EQ(chunk_delta_rule_pass_layout(64, 32).bytes, 112640u);
  EXPECT_EQ(chunk_delta_rule_pass_layout(64, 64).bytes, 145408u);
  EXPECT_EQ(chunk_delta_rule_pass_blocks_per_sm(145408u), 1);
}

TEST(ChunkDeltaRulePlan, ChunksAlternateStagesSoTheNextChunksCopiesNeverLandInTheOneBeingRead) {
  const ChunkDeltaRulePlan plan = plan_chunk_delta_rule(2, 5 * kC + 3, 64, 64, 132);  // 6 chunks, a short tail
  EXPECT_NE(plan.pass_layout.even, plan.pass_layout.odd);
  for (std::int64_t chunk = 0; chunk + 1 < plan.chunks; ++chunk) {
    EXPECT_NE(plan.pass_stage(chunk), plan.pass_stage(chunk + 1)) << chunk;
    if (chunk >= 1) {
      EXPECT_EQ(plan.pass_stage(chunk + 1), plan.pass_stage(chunk - 1)) << chunk;
    }
  }
  EXPECT_EQ(plan.pass_stage(0), plan.pass_layout.even);
}

TEST(ChunkDeltaRulePlan, PassBlocksPerSmAreWhatSharedMemoryAndThreadsAllow) {
  for (const std::size_t bytes : {std::size_t{1024}, std::size_t{56320}, std::size_t{96256}, std::size_t{112640},
                                  std::size_t{115712}, std::size_t{115840}, std::size_t{145408}, std::size_t{221184}}) {
    const int per_sm = chunk_delta_rule_pass_blocks_per_sm(bytes);
    ASSERT_GE(per_sm, 1) << bytes;
    EXPECT_LE(per_sm * kDeltaRulePassThreads, kSm90ThreadsPerSm);
    EXPECT_LE(per_sm * (bytes + kSm90SharedReservedPerBlock), kSm90SharedBytesPerSm) << bytes;
    const bool thread_bound = (per_sm + 1) * kDeltaRulePassThreads > kSm90ThreadsPerSm;
    EXPECT_TRUE(thread_bound || (per_sm + 1) * (bytes + kSm90SharedReservedPerBlock) > kSm90SharedBytesPerSm)
        << bytes << ": one more block would have fitted";
  }
  EXPECT_EQ(chunk_delta_rule_pass_blocks_per_sm(1024), kSm90ThreadsPerSm / kDeltaRulePassThreads);
  EXPECT_EQ(chunk_delta_rule_pass_blocks_per_sm(112640), 2);
  EXPECT_EQ(chunk_delta_rule_pass_blocks_per_sm(115712), 2) << "2 x (113 KiB + 1 KiB) = 228 KiB exactly";
  EXPECT_EQ(chunk_delta_rule_pass_blocks_per_sm(115840), 1) << "128 bytes more: 2 no longer fit";
}

TEST(ChunkDeltaRulePlan, SharedMemoryFitsSm90AndEveryWmmaTileIsAligned) {
  for (int dk = 16; dk <= kDeltaRuleMaxDim; dk += 16) {
    for (int dv = 16; dv <= kDeltaRuleMaxDim; dv += 16) {
      for (const int sms : {0, 132}) {
        const ChunkDeltaRulePlan plan = plan_chunk_delta_rule(8, 100, dk, dv, sms);
        EXPECT_LE(plan.max_shared_bytes(), kDeltaRuleMaxSharedBytes) << dk << " x " << dv;
        // copy_rows' 16-byte vectors need bf16 rows starting on 16 bytes: the bf16 strides'
        // multiple of 8 elements.
        for (const int ld : {plan.ld_k, plan.ld_v, plan.ld_c, plan.ld_n}) expect_wmma_bf16_stride(ld);
        for (const int ld : {plan.ld_a, plan.ld_acc, plan.ld_s}) expect_wmma_float_stride(ld);
        EXPECT_EQ(plan.ld_a, kC + kDeltaRuleFloatPad) << "the prepare kernel's compile-time stride of A";
        EXPECT_GE(plan.ld_k, dk);
        EXPECT_GE(plan.ld_v, dv);
        EXPECT_GE(plan.ld_c, kC);
        EXPECT_GE(plan.ld_acc, std::max({kC, dk, dv})) << "Q K^T, then W, then U share the fp32 tile";
        EXPECT_GE(plan.ld_n, plan.value_tile);
        EXPECT_GE(plan.ld_s, plan.value_tile);
        // Bytes of the [C][ld_k] bf16 tiles and the fp32 [C] rows.
        const std::size_t keys = kC * plan.ld_k * 2u, gates = kC * 4u;
        const auto& p = plan.prepare_layout;
        expect_disjoint_aligned({{p.q, keys}, {p.k, keys}, {p.k_scaled, keys}, {p.v, kC * plan.ld_v * 2u},
                                 {p.t, kC * plan.ld_c * 2u}, {p.a, kC * plan.ld_a * 4u},
                                 {p.acc, kC * plan.ld_acc * 4u}, {p.decay, gates}, {p.beta, gates}},
                                p.bytes);
        expect_pass_layout_double_buffered(plan);
      }
    }
  }
}

TEST(ChunkDeltaRulePlan, WorkspaceIsExactlyWhatThePrepareKernelWritesAndThePassReads) {
  for (const std::int64_t tokens : {1, 63, 64, 65, 300}) {
    for (const int d : {16, 48, 128}) {
      const std::int64_t bh = 3;
      const ChunkDeltaRulePlan plan = plan_chunk_delta_rule(bh, tokens, d, d, 132);
      const std::int64_t total = plan.workspace_bf16_elements();
      const WorkspacePart parts[] = {{plan.w_offset(), d}, {plan.k_offset(), d}, {plan.q_offset(), d},
                                     {plan.p_offset(), kC}, {plan.u_offset(), d}};
      // Prepare: block (bh, chunk) writes C x width of every region, and its b_last.
      const std::vector<int> written = prepare_writes(plan, parts, kC, total, delta_rule_chunk_offset);
      std::vector<int> read(static_cast<std::size_t>(total), 0);
      std::vector<int> decays(static_cast<std::size_t>(plan.workspace_decay_elements), 0);
      for (std::int64_t block = 0; block < plan.prepare_blocks; ++block) ++decays[static_cast<std::size_t>(block)];
      // Pass: block (bh, tile) reads W, K~, Q~, P whole and U's columns [j0, j0 + n) of every chunk.
      for (std::int64_t block = 0; block < plan.pass_blocks; ++block) {
        const std::int64_t b = block / plan.value_tiles;
        const int j0 = static_cast<int>(block % plan.value_tiles) * plan.value_tile;
        for (std::int64_t c = 0; c < plan.chunks; ++c) {
          for (int r = 0; r < 4; ++r) {
            const std::int64_t base = parts[r].offset + delta_rule_chunk_offset(plan, b, c, parts[r].width);
            for (std::int64_t e = 0; e < kC * parts[r].width; ++e) read[static_cast<std::size_t>(base + e)] = 1;
          }
          const std::int64_t base = plan.u_offset() + delta_rule_chunk_offset(plan, b, c, d);
          for (int m = 0; m < kC; ++m) {
            for (int j = j0; j < j0 + plan.value_tile; ++j) {
              const std::int64_t e = base + m * d + j;
              ASSERT_LT(e, total);
              ++read[static_cast<std::size_t>(e)];
            }
          }
        }
      }
      for (const int n : written) ASSERT_EQ(n, 1) << "tokens " << tokens << " d " << d;
      for (const int n : read) ASSERT_EQ(n, 1) << "every element is read once (U by exactly one value tile)";
      for (const int n : decays) ASSERT_EQ(n, 1);
      const std::int64_t rows = bh * plan.chunks * kC;
      EXPECT_EQ(plan.workspace_bytes(), 2 * rows * (4 * d + kC) + 4 * bh * plan.chunks);
      EXPECT_EQ(chunk_delta_rule_workspace_bytes(bh, tokens, d, d), plan.workspace_bytes());
    }
  }
}

TEST(ChunkDeltaRulePlan, RefusesHeadSizesOffTheWmmaGrid) {
  EXPECT_TRUE(chunk_delta_rule_supports(64, 64));
  EXPECT_TRUE(chunk_delta_rule_supports(16, 128));
  for (const std::int64_t d : {0, 1, 8, 17, 49, 100, 144, 256}) {
    EXPECT_FALSE(chunk_delta_rule_supports(d, 64)) << d;
    EXPECT_FALSE(chunk_delta_rule_supports(64, d)) << d;
    EXPECT_THROW(plan_chunk_delta_rule(1, 10, d, 64, 132), std::invalid_argument) << d;
    EXPECT_EQ(chunk_delta_rule_workspace_bytes(1, 10, d, 64), 0) << d;
  }
}

TEST(ChunkDeltaRulePlan, GatedDeltaNetRunsItForBf16PrefillOfSixteenMultipleHeadsOnly) {
  const auto cell = [](std::int64_t dim, DType dtype, Phase phase = Phase::prefill) {
    return mechanism_cell("gated_deltanet", 8, dim, 1000, dtype, phase, 2);
  };
  EXPECT_TRUE(gated_deltanet_cuda_prefill_is_chunked(cell(64, DType::bfloat16)));
  EXPECT_TRUE(gated_deltanet_cuda_prefill_is_chunked(cell(128, DType::bfloat16)));
  EXPECT_TRUE(gated_deltanet_cuda_prefill_is_chunked(cell(16, DType::bfloat16)));
  EXPECT_FALSE(gated_deltanet_cuda_prefill_is_chunked(cell(64, DType::float32)))
      << "fp32 keeps the recurrence: bf16 operands would break 1e-4";
  EXPECT_FALSE(gated_deltanet_cuda_prefill_is_chunked(cell(64, DType::bfloat16, Phase::decode)));
  EXPECT_FALSE(gated_deltanet_cuda_prefill_is_chunked(cell(40, DType::bfloat16)));
  EXPECT_FALSE(gated_deltanet_cuda_prefill_is_chunked(cell(256, DType::bfloat16)));
  EXPECT_EQ(gated_deltanet_cuda_workspace_bytes(cell(64, DType::float32)), 0);
  EXPECT_EQ(gated_deltanet_cuda_workspace_bytes(cell(40, DType::bfloat16)), 0);
  for (const std::int64_t dim : {16, 64, 128}) {
    const Cell chunked = cell(dim, DType::bfloat16);
    EXPECT_FALSE(gated_deltanet_cuda_unsupported(chunked).has_value()) << dim;
    // 16 chunks of 64 rows per head, 16 heads: W, K~, Q~, U (dim wide) and P (64 wide) in bf16,
    // b_last in fp32.
    EXPECT_EQ(gated_deltanet_cuda_workspace_bytes(chunked), 2 * 16 * 16 * 64 * (4 * dim + 64) + 4 * 16 * 16);
  }
}

TEST(ChunkDeltaRulePlan, GatedDeltaNetPeakPredictionCountsTheChunkWorkspace) {
  const Mechanism* gdn = find_mechanism("gated_deltanet");
  ASSERT_NE(gdn, nullptr);
  // q, k, v, out in the storage dtype and g, beta in fp32 per token; S in fp32.
  const std::int64_t state = 16 * 64 * 64 * 4;
  const Cell bf16_cell = mechanism_cell("gated_deltanet", 8, 64, 1000, DType::bfloat16, Phase::prefill, 2);
  EXPECT_EQ(gdn->predicted_peak_bytes(bf16_cell),
            state + 1000 * 16 * (4 * 64 * 2 + 8) + gated_deltanet_cuda_workspace_bytes(bf16_cell));
  const Cell fp32_cell = mechanism_cell("gated_deltanet", 8, 64, 1000, DType::float32, Phase::prefill, 2);
  EXPECT_EQ(gdn->predicted_peak_bytes(fp32_cell), state + 1000 * 16 * (4 * 64 * 4 + 8))
      << "the recurrence has no workspace";
}

}  // namespace
}  // namespace arch_bench
