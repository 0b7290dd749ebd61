// RWKV-7's chunkwise tensor-core prefill's launch planning (mechanisms/rwkv/rwkv7/chunk_plan.hpp), on
// the CPU: which cells take it, chunk counts and tail rows, the pass's value tile, shared-memory
// layouts that fit sm_90 with every wmma tile and 16-byte copy aligned, a workspace exactly as large
// as the kernels index (the prepare kernel's writes and the pass kernel's reads replayed here), and
// rwkv7's peak prediction and grid refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "mechanisms/common/chunk_pass_occupancy.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_plan.hpp"
#include "support/chunk_layout_checks.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

using namespace testing;  // the chunk-plan checks (chunk_layout_checks.hpp) and mechanism_cell

constexpr int kC = kRwkv7ChunkTokens;
constexpr std::size_t kSm90OptInShared = 227 * 1024;

Cell rwkv7_cell(std::int64_t dim, DType dtype = DType::bfloat16, Phase phase = Phase::prefill,
                std::int64_t length = 1000) {
  return mechanism_cell("rwkv7", 8, dim, length, dtype, phase, 2);
}

TEST(Rwkv7ChunkPlan, OnlyBf16PrefillCellsOfSixteenMultipleHeadsRunChunkwise) {
  for (std::int64_t dim = 0; dim <= 300; ++dim) {
    EXPECT_EQ(rwkv7_chunk_supports(dim), dim >= 16 && dim <= 128 && dim % 16 == 0) << dim;
  }
  EXPECT_TRUE(rwkv7_cuda_prefill_is_chunked(rwkv7_cell(64)));
  EXPECT_TRUE(rwkv7_cuda_prefill_is_chunked(rwkv7_cell(16)));
  EXPECT_TRUE(rwkv7_cuda_prefill_is_chunked(rwkv7_cell(128)));
  EXPECT_FALSE(rwkv7_cuda_prefill_is_chunked(rwkv7_cell(64, DType::float32)))
      << "fp32 keeps the recurrence: bf16 operands would break 1e-4";
  EXPECT_FALSE(rwkv7_cuda_prefill_is_chunked(rwkv7_cell(64, DType::bfloat16, Phase::decode)));
  EXPECT_FALSE(rwkv7_cuda_prefill_is_chunked(rwkv7_cell(40)));
  EXPECT_FALSE(rwkv7_cuda_prefill_is_chunked(rwkv7_cell(256)));
  EXPECT_EQ(rwkv7_cuda_workspace_bytes(rwkv7_cell(64, DType::float32)), 0);
  EXPECT_EQ(rwkv7_cuda_workspace_bytes(rwkv7_cell(64, DType::bfloat16, Phase::decode)), 0);
  EXPECT_EQ(rwkv7_cuda_workspace_bytes(rwkv7_cell(40)), 0);
  for (const std::int64_t d : {0, 8, 17, 100, 144, 256}) {
    EXPECT_THROW(plan_rwkv7_chunk(1, 10, d, 132), std::invalid_argument) << d;
  }
  EXPECT_THROW(plan_rwkv7_chunk(-1, 10, 64, 132), std::invalid_argument);
  EXPECT_THROW(plan_rwkv7_chunk(1, -1, 64, 132), std::invalid_argument);
}

TEST(Rwkv7ChunkPlan, ChunksCoverEveryTokenOnceWithAShortTail) {
  for (const std::int64_t tokens : {1, 2, 31, 32, 33, 63, 64, 65, 300, 1000, 8192}) {
    const Rwkv7ChunkPlan plan = plan_rwkv7_chunk(3, tokens, 64, 132);
    expect_chunks_cover_tokens(tokens, plan.chunks, kC, rwkv7_chunk_rows);
    EXPECT_EQ(plan.prepare_blocks, 3 * plan.chunks);
  }
  const Rwkv7ChunkPlan empty = plan_rwkv7_chunk(2, 0, 64, 132);
  EXPECT_EQ(empty.chunks, 0);
  EXPECT_EQ(empty.prepare_blocks, 0);
  EXPECT_EQ(empty.workspace_bytes(), 0);
}

// The pass's double-buffered shared memory at `dim` and `tile`: each stage's operand regions inside
// it, the two stages disjoint from each other and from U, H, H's copy and the accumulator (chunk
// c + 1's copies land in one while chunk c's products read the other), all 128-byte aligned and
// inside the opt-in limit.
void expect_pass_layout_double_buffered(int dim, int tile, const Rwkv7ChunkPassOperands& stage,
                                        const Rwkv7ChunkPassLayout& at) {
  SCOPED_TRACE(::testing::Message() << "dim " << dim << " tile " << tile);
  const std::size_t C = kC, D = static_cast<std::size_t>(dim);
  const std::size_t rows = C * (D + kRwkv7ChunkBf16Pad) * 2u, scores = C * (C + kRwkv7ChunkBf16Pad) * 2u;
  const std::size_t values = C * static_cast<std::size_t>(tile + kRwkv7ChunkBf16Pad) * 2u;
  const std::size_t state_ld = static_cast<std::size_t>(tile + kRwkv7ChunkFloatPad);
  expect_disjoint_aligned({{stage.w, rows},
                           {stage.r, rows},
                           {stage.b, rows},
                           {stage.k, rows},
                           {stage.m, scores},
                           {stage.p_rb, scores},
                           {stage.p_rk, scores},
                           {stage.v, values},
                           {stage.decay, D * 4u}},
                          stage.bytes);
  expect_disjoint_aligned({{at.even, stage.bytes},
                           {at.odd, stage.bytes},
                           {at.u, values},
                           {at.s, D * state_ld * 4u},
                           {at.s_operand, D * (tile + kRwkv7ChunkBf16Pad) * 2u},
                           {at.acc, C * state_ld * 4u}},
                          at.bytes);
  EXPECT_LE(at.even + stage.bytes, at.odd) << "the two stages are disjoint";
  EXPECT_LE(at.bytes, kSm90OptInShared);
  EXPECT_EQ(stage.decay % 16, 0u) << "e_last is copied 16 bytes at a time";
}

TEST(Rwkv7ChunkPlan, ValueTileDividesTheHeadAndCostsTheLeastOfTheWidths) {
  for (int dim = 16; dim <= kRwkv7ChunkMaxDim; dim += 16) {
    for (const std::int64_t bh : {1, 8, 128, 1024}) {
      for (const int sms : {0, 1, 132}) {
        const Rwkv7ChunkPlan plan = plan_rwkv7_chunk(bh, 300, dim, sms);
        EXPECT_EQ(plan.value_tile % 16, 0);
        EXPECT_EQ(dim % plan.value_tile, 0);
        EXPECT_EQ(plan.value_tiles * plan.value_tile, dim);
        EXPECT_EQ(plan.pass_blocks, bh * plan.value_tiles);
        EXPECT_EQ(plan.prepare_blocks, bh * plan.chunks);
        EXPECT_EQ(plan.pass_blocks_per_sm, chunk_pass_blocks_per_sm(plan.pass_layout.bytes, kRwkv7ChunkPassThreads));
        const std::int64_t cost = rwkv7_chunk_pass_cost(bh, dim, plan.value_tile, plan.pass_blocks_per_sm, sms);
        for (const int other : kRwkv7ChunkValueTiles) {
          if (other == plan.value_tile || dim % other != 0) continue;
          if (sms <= 0) {
            EXPECT_LT(other, plan.value_tile) << "no device: the widest tile dividing dim";
            continue;
          }
          const int per_sm =
              chunk_pass_blocks_per_sm(rwkv7_chunk_pass_layout(dim, other).bytes, kRwkv7ChunkPassThreads);
          const std::int64_t other_cost = rwkv7_chunk_pass_cost(bh, dim, other, per_sm, sms);
          EXPECT_TRUE(other_cost > cost || (other_cost == cost && other < plan.value_tile))
              << dim << " bh " << bh << " sms " << sms << ": " << other << " vs " << plan.value_tile;
        }
      }
    }
  }
  // B16 H8 d64 on an H200's 132 SMs: 128 heads. 32-column tiles: 256 blocks of 77.5 KiB, 2 per SM,
  // one wave, a warp's chain 22 wmma steps a chunk (U 6, O 8, H 2 x 4); 16 columns: 3 per SM, 512
  // blocks in 2 waves of 18; 64 columns: one wave of 44.
  const Rwkv7ChunkPlan plan = plan_rwkv7_chunk(128, 8192, 64, 132);
  EXPECT_EQ(plan.value_tile, 32);
  EXPECT_EQ(plan.pass_blocks, 256);
  EXPECT_EQ(plan.pass_layout.bytes, 79360u);
  EXPECT_EQ(plan.pass_blocks_per_sm, 2);
  EXPECT_EQ(rwkv7_chunk_pass_cost(128, 64, 32, 2, 132), 22);
  EXPECT_EQ(rwkv7_chunk_pass_cost(128, 64, 16, 3, 132), 36);
  EXPECT_EQ(rwkv7_chunk_pass_cost(128, 64, 64, 2, 132), 44);
  EXPECT_EQ(chunk_pass_blocks_per_sm(rwkv7_chunk_pass_layout(64, 16).bytes, kRwkv7ChunkPassThreads), 3);
  EXPECT_EQ(rwkv7_chunk_value_tile(1, 96, 0), 32) << "no device: the widest dividing dim";
}

TEST(Rwkv7ChunkPlan, EveryTileOfEveryHeadSizeDoubleBuffersInsideTheOptInLimit) {
  for (int dim = 16; dim <= kRwkv7ChunkMaxDim; dim += 16) {
    for (const int tile : kRwkv7ChunkValueTiles) {
      const Rwkv7ChunkPassLayout layout = rwkv7_chunk_pass_layout(dim, tile);
      expect_pass_layout_double_buffered(dim, tile, rwkv7_chunk_pass_operands(dim, tile), layout);
      EXPECT_GE(chunk_pass_blocks_per_sm(layout.bytes, kRwkv7ChunkPassThreads), 1);
    }
  }
  EXPECT_EQ(rwkv7_chunk_pass_layout(128, 64).bytes, 161792u) << "the largest: 158 KiB";
  EXPECT_EQ(rwkv7_chunk_pass_layout(64, 16).bytes, 68096u);
  EXPECT_EQ(rwkv7_chunk_pass_layout(64, 64).bytes, 101888u);
  // Chunks alternate stages: chunk c + 1's copies never land in chunk c's.
  const Rwkv7ChunkPlan plan = plan_rwkv7_chunk(2, 5 * kC + 3, 64, 132);
  for (std::int64_t chunk = 0; chunk + 1 < plan.chunks; ++chunk) {
    EXPECT_NE(plan.pass_stage(chunk), plan.pass_stage(chunk + 1)) << chunk;
  }
  EXPECT_EQ(plan.pass_stage(0), plan.pass_layout.even);
  EXPECT_EQ(plan.pass_stage(1), plan.pass_layout.odd);
}

TEST(Rwkv7ChunkPlan, SharedMemoryFitsSm90AndEveryWmmaTileIsAligned) {
  for (int dim = 16; dim <= kRwkv7ChunkMaxDim; dim += 16) {
    for (const int sms : {0, 132}) {
      const Rwkv7ChunkPlan plan = plan_rwkv7_chunk(8, 100, dim, sms);
      EXPECT_LE(plan.max_shared_bytes(), kSm90OptInShared) << dim;
      for (const int ld : {plan.ld_k, plan.ld_c, plan.ld_n}) expect_wmma_bf16_stride(ld);
      for (const int ld : {plan.ld_score, plan.ld_acc, plan.ld_s}) expect_wmma_float_stride(ld);
      EXPECT_GE(plan.ld_k, dim);
      EXPECT_GE(plan.ld_c, kC);
      EXPECT_GE(plan.ld_score, kC);
      EXPECT_GE(plan.ld_acc, dim);
      EXPECT_GE(plan.ld_n, plan.value_tile);
      EXPECT_GE(plan.ld_s, plan.value_tile);
      EXPECT_EQ(plan.value_tile % 8, 0) << "V's tile is copied 16 bytes at a time";
      // Bytes of the [C][ld_k] row tiles and the [C][C] score tiles.
      const std::size_t C = kC, D = static_cast<std::size_t>(dim);
      const std::size_t rows = C * plan.ld_k * 2u, scores = C * plan.ld_c * 2u;
      const auto& p = plan.prepare_layout;
      expect_disjoint_aligned({{p.decay, C * D * 4}, {p.a, rows}, {p.r, rows}, {p.b, rows}, {p.k, rows}, {p.v, rows},
                               {p.scores, 4 * C * plan.ld_score * 4u}, {p.t, scores}, {p.acc, C * plan.ld_acc * 4u}},
                              p.bytes);
      // The prepare kernel stages the chunk's raw w (C x ld_k bf16) in the score blocks' memory.
      EXPECT_GE(4 * C * plan.ld_score * 4u, C * plan.ld_k * 2u);
      expect_pass_layout_double_buffered(dim, plan.value_tile, plan.pass_operands, plan.pass_layout);
      EXPECT_EQ(plan.ld_n, plan.value_tile + kRwkv7ChunkBf16Pad);
      EXPECT_EQ(plan.ld_s, plan.value_tile + kRwkv7ChunkFloatPad);
    }
  }
}

TEST(Rwkv7ChunkPlan, WorkspaceIsExactlyWhatThePrepareKernelWritesAndThePassReads) {
  for (const std::int64_t tokens : {1, 31, 32, 33, 300}) {
    for (const int d : {16, 48, 128}) {
      const std::int64_t bh = 3;
      const Rwkv7ChunkPlan plan = plan_rwkv7_chunk(bh, tokens, d, 132);
      const std::int64_t total = plan.workspace_bf16_elements();
      const WorkspacePart parts[] = {{plan.w_offset(), d},  {plan.r_offset(), d},  {plan.b_offset(), d},
                                     {plan.k_offset(), d},  {plan.m_offset(), kC}, {plan.p_rb_offset(), kC},
                                     {plan.p_rk_offset(), kC}};
      // Prepare: block (bh, chunk) writes C x width of every region, and its e_last.
      const std::vector<int> written = prepare_writes(plan, parts, kC, total, rwkv7_chunk_offset);
      std::vector<int> read(static_cast<std::size_t>(total), 0);
      std::vector<int> decays(static_cast<std::size_t>(plan.workspace_decay_elements), 0);
      for (std::int64_t block = 0; block < plan.prepare_blocks; ++block) {
        const std::int64_t b = block / plan.chunks, c = block % plan.chunks;
        for (int e = 0; e < d; ++e) ++decays[static_cast<std::size_t>(rwkv7_chunk_decay_offset(plan, b, c) + e)];
      }
      // Pass: every block (bh, tile) reads all of its head's chunks (the same elements by every tile).
      for (std::int64_t block = 0; block < plan.pass_blocks; ++block) {
        const std::int64_t b = block / plan.value_tiles;
        for (std::int64_t c = 0; c < plan.chunks; ++c) {
          for (const WorkspacePart& part : parts) {
            const std::int64_t base = part.offset + rwkv7_chunk_offset(plan, b, c, part.width);
            for (std::int64_t e = 0; e < kC * part.width; ++e) {
              ASSERT_LT(base + e, total);
              read[static_cast<std::size_t>(base + e)] = 1;
            }
          }
        }
      }
      for (const int n : written) ASSERT_EQ(n, 1) << "tokens " << tokens << " d " << d;
      for (const int n : read) ASSERT_EQ(n, 1) << "every element is read";
      for (const int n : decays) ASSERT_EQ(n, 1);
      const std::int64_t rows = bh * plan.chunks * kC;
      EXPECT_EQ(plan.decay_byte_offset() % 16, 0);
      EXPECT_GE(plan.decay_byte_offset(), 2 * total);
      EXPECT_EQ(plan.workspace_bytes(), (2 * rows * (4 * d + 3 * kC) + 15) / 16 * 16 + 4 * bh * plan.chunks * d);
      EXPECT_EQ(plan.workspace_bytes() % 4, 0);
      EXPECT_EQ(plan.workspace_floats() * 4, plan.workspace_bytes());
    }
  }
}

TEST(Rwkv7ChunkPlan, MechanismCountsTheWorkspaceAndRefusesOversizedGrids) {
  const Mechanism* rwkv7 = find_mechanism("rwkv7");
  ASSERT_NE(rwkv7, nullptr);
  const Cell bf16_cell = rwkv7_cell(64), fp32_cell = rwkv7_cell(64, DType::float32);
  const std::int64_t workspace = rwkv7_cuda_workspace_bytes(bf16_cell);
  EXPECT_EQ(workspace, plan_rwkv7_chunk(16, 1000, 64, 132).workspace_bytes()) << "independent of the value tile";
  EXPECT_GT(workspace, 0);
  // Seven streams (r, w_raw, k, v, kappa, iclr and the output) of 16 heads x 1000 tokens x 64.
  EXPECT_EQ(rwkv7->predicted_peak_bytes(bf16_cell) - workspace,
            rwkv7->predicted_peak_bytes(fp32_cell) - 7 * 16 * 1000 * 64 * 2)
      << "bf16 streams are half of fp32's";
  Cell huge = bf16_cell;
  huge.sequence_length = std::int64_t{1} << 34;  // 2^29 chunks x 16 heads: past gridDim.x
  const auto why = rwkv7->unsupported_on(huge, "cuda");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("grid"), std::string::npos) << *why;
  huge.dtype = DType::float32;  // the recurrence's grid does not grow with L
  EXPECT_FALSE(rwkv7->unsupported_on(huge, "cuda"));
}

}  // namespace
}  // namespace arch_bench
