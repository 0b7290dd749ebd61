// The chunkwise scalar-decay prefill's launch planning (mechanisms/common/chunk_scalar_decay_plan.hpp),
// on the CPU: chunk counts and tail rows for L not a multiple of C, L < C and L = 1; the grids the
// three kernels decode; shared-memory layouts that fit sm_90, do not overlap and keep every wmma
// tile pointer 32-byte aligned; a workspace exactly as large as the kernels index (the tile loops
// of the chunk-state and output kernels replayed here); plans refused past the grid or the
// shared-memory opt-in; a cell's workspace; and retnet's and mamba2's dispatch and peak prediction.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "core/backends/cpu/cpu_backend.hpp"
#include "mechanisms/common/chunk_scalar_decay_plan.hpp"
#include "mechanisms/common/chunk_scalar_decay_workspace.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/mamba2/cuda_plan.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/retnet/cuda_plan.hpp"
#include "support/chunk_layout_checks.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

using namespace testing;  // the chunk-plan checks (chunk_layout_checks.hpp) and mechanism_cell

constexpr int kC = kScalarDecayChunk;
constexpr int kF = kScalarDecayFragment;
constexpr int kWarps = kScalarDecayThreads / 32;

TEST(ChunkScalarDecayPlan, ChunksCoverEveryTokenOnceWithAShortTail) {
  for (const std::int64_t tokens : {1, 2, 63, 64, 65, 127, 128, 300, 1000, 8192}) {
    const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(3, tokens, 64, 64);
    expect_chunks_cover_tokens(tokens, plan.chunks, kC, scalar_decay_chunk_rows);
  }
  EXPECT_EQ(plan_chunk_scalar_decay(2, 1, 64, 64).chunks, 1);
  EXPECT_EQ(scalar_decay_chunk_rows(1, 0), 1);
  EXPECT_EQ(scalar_decay_chunk_rows(63, 0), 63);
  EXPECT_EQ(scalar_decay_chunk_rows(65, 1), 1);
  const ChunkScalarDecayPlan empty = plan_chunk_scalar_decay(2, 0, 64, 64);
  EXPECT_EQ(empty.chunks, 0);
  EXPECT_EQ(empty.state_blocks, 0);
  EXPECT_EQ(empty.workspace_bytes(), 0);
}

TEST(ChunkScalarDecayPlan, GridsAreOneBlockPerHeadAndChunkAndOneThreadPerPairOfStateElements) {
  for (const int dk : {16, 64, 128}) {
    for (const int dv : {16, 48, 64, 128}) {
      const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(16, 300, dk, dv);
      EXPECT_EQ(plan.threads, 256);
      EXPECT_EQ(plan.state_blocks, 16 * 5);
      EXPECT_EQ(plan.output_blocks, 16 * 5);
      // block = bh * chunks + chunk, decoded back as the kernels do.
      std::vector<int> seen(static_cast<std::size_t>(16 * 5), 0);
      for (std::int64_t block = 0; block < plan.state_blocks; ++block) {
        const std::int64_t bh = block / plan.chunks, chunk = block % plan.chunks;
        ASSERT_LT(bh, 16);
        ++seen[static_cast<std::size_t>(bh * plan.chunks + chunk)];
      }
      for (const int n : seen) EXPECT_EQ(n, 1);
      EXPECT_EQ(plan.prefix_blocks, 16 * plan.prefix_blocks_per_head);
      // The prefix kernel's thread e of a head carries the pair (2e, 2e + 1) of S.
      EXPECT_GE(plan.prefix_blocks_per_head * plan.threads, dk * dv / 2);
      EXPECT_LT((plan.prefix_blocks_per_head - 1) * plan.threads, dk * dv / 2) << "no wholly idle block";
    }
  }
}

TEST(ChunkScalarDecayPlan, SharedMemoryFitsSm90AndEveryWmmaTileIsAligned) {
  std::size_t widest = 0;
  for (int dk = 16; dk <= kScalarDecayMaxDim; dk += 16) {
    for (int dv = 16; dv <= kScalarDecayMaxDim; dv += 16) {
      const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(1, 100, dk, dv);
      EXPECT_LE(plan.max_shared_bytes(), kScalarDecayMaxSharedBytes) << dk << " x " << dv;
      widest = std::max(widest, plan.max_shared_bytes());
      for (const int ld : {plan.ld_k, plan.ld_v, plan.ld_p}) expect_wmma_bf16_stride(ld);
      expect_wmma_float_stride(plan.ld_acc);
      EXPECT_GE(plan.ld_k, dk);
      EXPECT_GE(plan.ld_v, dv);
      EXPECT_GE(plan.ld_p, kC);
      EXPECT_GE(plan.ld_acc, std::max(kC, dv)) << "the scores, then O, share the fp32 tile";
      const auto& s = plan.state_layout;
      expect_disjoint_aligned({{s.k, kC * plan.ld_k * 2u},
                               {s.v, kC * plan.ld_v * 2u},
                               {s.decay, kC * 4u},
                               {s.u, std::size_t{kWarps} * kF * kF * 4u}},
                              s.bytes);
      const auto& o = plan.output_layout;
      expect_disjoint_aligned({{o.q, kC * plan.ld_k * 2u},
                               {o.k, kC * plan.ld_k * 2u},
                               {o.v, kC * plan.ld_v * 2u},
                               {o.s, static_cast<std::size_t>(dk) * plan.ld_v * 2u},
                               {o.p, kC * plan.ld_p * 2u},
                               {o.acc, kC * plan.ld_acc * 4u},
                               {o.decay, kC * 4u}},
                              o.bytes);
    }
  }
  EXPECT_GT(widest, std::size_t{48} * 1024) << "the widest heads need the opt-in (configure_chunk_scalar_decay)";
}

TEST(ChunkScalarDecayPlan, WorkspaceIsExactlyWhatTheKernelsIndex) {
  for (const std::int64_t tokens : {1, 63, 64, 65, 300}) {
    for (const int d : {16, 64, 128}) {
      const std::int64_t bh = 3;
      const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(bh, tokens, d, d);
      // Chunk-state kernel: warp w stores U tiles w, w + 8, ... of a [dk][dv] block per (bh, chunk),
      // in bf16: the workspace's floats hold two states' elements each.
      const std::int64_t bf16_elements = 2 * plan.workspace_state_elements;
      std::vector<int> written(static_cast<std::size_t>(bf16_elements), 0);
      std::vector<int> decays(static_cast<std::size_t>(plan.workspace_decay_elements), 0);
      const int tiles_j = plan.dv / kF, tiles = (plan.dk / kF) * tiles_j;
      for (std::int64_t block = 0; block < plan.state_blocks; ++block) {
        const std::int64_t b = block / plan.chunks, c = block % plan.chunks;
        const std::int64_t base = scalar_decay_state_offset(plan, b, c);
        for (int warp = 0; warp < kWarps; ++warp) {
          for (int tile = warp; tile < tiles; tile += kWarps) {
            const int ti = tile / tiles_j, tj = tile % tiles_j;
            // Lane l stores row l / 2, columns 8 (l % 2) .. + 8 as one 16-byte vector.
            for (int lane = 0; lane < 32; ++lane) {
              const int r = lane / 2, c0 = (lane % 2) * 8;
              const std::int64_t first = base + static_cast<std::int64_t>(ti * kF + r) * plan.dv + tj * kF + c0;
              ASSERT_EQ(first % 8, 0) << "16-byte aligned";
              for (int col = 0; col < 8; ++col) {
                ASSERT_GE(first + col, 0);
                ASSERT_LT(first + col, bf16_elements);
                ++written[static_cast<std::size_t>(first + col)];
              }
            }
          }
        }
        const std::int64_t d_index = b * plan.chunks + c;
        ASSERT_LT(d_index, plan.workspace_decay_elements);
        ++decays[static_cast<std::size_t>(d_index)];
      }
      for (const int n : written) ASSERT_EQ(n, 1) << "tokens " << tokens << " d " << d;
      for (const int n : decays) ASSERT_EQ(n, 1);
      // Prefix kernel: thread e of head bh reads and rewrites the pair at offset(bh, c) / 2 + e of
      // every chunk c; together the threads touch every pair once per chunk.
      std::vector<int> paired(static_cast<std::size_t>(plan.workspace_state_elements), 0);
      const std::int64_t pairs = static_cast<std::int64_t>(d) * d / 2;
      for (std::int64_t block = 0; block < plan.prefix_blocks; ++block) {
        const std::int64_t b = block / plan.prefix_blocks_per_head;
        for (int t = 0; t < plan.threads; ++t) {
          const std::int64_t e = (block % plan.prefix_blocks_per_head) * plan.threads + t;
          if (e >= pairs) continue;
          for (std::int64_t c = 0; c < plan.chunks; ++c) {
            const std::int64_t at = scalar_decay_state_offset(plan, b, 0) / 2 + e + c * pairs;
            ASSERT_EQ(at, scalar_decay_state_offset(plan, b, c) / 2 + e);
            ASSERT_LT(at, plan.workspace_state_elements);
            ++paired[static_cast<std::size_t>(at)];
          }
        }
      }
      for (const int n : paired) ASSERT_EQ(n, 1);
      EXPECT_EQ(plan.workspace_bytes(), 4 * (bh * plan.chunks * d * d / 2 + bh * plan.chunks))
          << "bf16 states, fp32 decays";
      EXPECT_EQ(chunk_scalar_decay_workspace_bytes(bh, tokens, d, d), plan.workspace_bytes());
    }
  }
}

TEST(ChunkScalarDecayPlan, OutputKernelComputesEveryScoreOnOrBelowTheDiagonalAndEveryOutputTileOnce) {
  for (const int dv : {16, 64, 128}) {
    const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(1, 64, 64, dv);
    constexpr int kTiles = kC / kF;
    std::vector<int> scores(kC * kC, 0), outputs(static_cast<std::size_t>(kC * dv), 0);
    for (int warp = 0; warp < kWarps; ++warp) {
      for (int tile = warp; tile < kTiles * kTiles; tile += kWarps) {
        const int ti = tile / kTiles, tj = tile % kTiles;
        if (tj > ti) continue;  // wholly above the diagonal: masked, never computed
        for (int r = 0; r < kF; ++r) {
          for (int c = 0; c < kF; ++c) ++scores[static_cast<std::size_t>((ti * kF + r) * kC + tj * kF + c)];
        }
      }
      const int tiles_j = dv / kF;
      for (int tile = warp; tile < kTiles * tiles_j; tile += kWarps) {
        const int ti = tile / tiles_j, tj = tile % tiles_j;
        for (int r = 0; r < kF; ++r) {
          for (int c = 0; c < kF; ++c) ++outputs[static_cast<std::size_t>((ti * kF + r) * dv + tj * kF + c)];
        }
      }
    }
    // The mask reads A_ij only for j <= i: each of those must have been written exactly once.
    for (int i = 0; i < kC; ++i) {
      for (int j = 0; j <= i; ++j) EXPECT_EQ(scores[static_cast<std::size_t>(i * kC + j)], 1) << i << "," << j;
    }
    for (const int n : outputs) EXPECT_EQ(n, 1);
    EXPECT_LE(dv, plan.ld_acc);
  }
}

TEST(ChunkScalarDecayPlan, RefusesHeadSizesOffTheWmmaGrid) {
  EXPECT_TRUE(chunk_scalar_decay_supports(64, 64));
  EXPECT_TRUE(chunk_scalar_decay_supports(16, 128));
  for (const std::int64_t d : {0, 1, 8, 17, 48 + 1, 100, 144, 256}) {
    EXPECT_FALSE(chunk_scalar_decay_supports(d, 64)) << d;
    EXPECT_FALSE(chunk_scalar_decay_supports(64, d)) << d;
    EXPECT_THROW(plan_chunk_scalar_decay(1, 10, d, 64), std::invalid_argument) << d;
    EXPECT_EQ(chunk_scalar_decay_workspace_bytes(1, 10, d, 64), 0) << d;
  }
}

TEST(ChunkScalarDecayPlan, RefusesToLaunchPastTheGridOrTheSharedMemoryOptIn) {
  EXPECT_FALSE(chunk_scalar_decay_unlaunchable(plan_chunk_scalar_decay(16, 1000, 128, 128)).has_value());
  // 2^10 heads of 2^27 tokens: 2^31 chunk blocks, one past the grid's limit.
  const ChunkScalarDecayPlan wide = plan_chunk_scalar_decay(1 << 10, std::int64_t{1} << 27, 16, 16);
  ASSERT_GT(wide.state_blocks, kCudaMaxGridX);
  EXPECT_TRUE(chunk_scalar_decay_unlaunchable(wide).has_value());
  const ChunkScalarDecayPlan just_fits = plan_chunk_scalar_decay(1 << 9, std::int64_t{1} << 27, 16, 16);
  ASSERT_LE(just_fits.state_blocks, kCudaMaxGridX);
  EXPECT_FALSE(chunk_scalar_decay_unlaunchable(just_fits).has_value());
  // Every supported head size fits (the test above); a layout past the opt-in is refused.
  ChunkScalarDecayPlan crowded = plan_chunk_scalar_decay(1, 64, 16, 16);
  crowded.output_layout.bytes = kScalarDecayMaxSharedBytes + 1;
  EXPECT_TRUE(chunk_scalar_decay_unlaunchable(crowded).has_value());
}

TEST(ChunkScalarDecayPlan, CellWorkspaceIsThePlansFromTheCellsAllocatorAndListedOnlyWhenSet) {
  HostAllocator allocator;
  std::vector<ByteSpan> spans;
  const ChunkScalarDecayWorkspace recurrence;  // a prefill without the chunked form
  recurrence.add_spans(spans);
  EXPECT_TRUE(spans.empty());
  const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(3, 300, 64, 32);
  {
    const ChunkScalarDecayWorkspace chunked(plan, allocator);
    ASSERT_TRUE(chunked.plan.has_value());
    EXPECT_EQ(chunked.plan->chunks, plan.chunks);
    EXPECT_EQ(allocator.current_bytes(), plan.workspace_bytes()) << "the peak prediction counts exactly this";
    chunked.add_spans(spans);
    ASSERT_EQ(spans.size(), 2u);
    EXPECT_EQ(spans[0].size(), static_cast<std::size_t>(4 * plan.workspace_state_elements));
    EXPECT_EQ(spans[1].size(), static_cast<std::size_t>(4 * plan.workspace_decay_elements));
  }
  EXPECT_EQ(allocator.current_bytes(), 0);
}

TEST(ChunkScalarDecayPlan, RetNetRunsItForBf16PrefillOfSixteenMultipleHeadsOnly) {
  EXPECT_TRUE(retnet_cuda_prefill_is_chunked(mechanism_cell("retnet", 8, 64, 1000, DType::bfloat16)));
  EXPECT_TRUE(retnet_cuda_prefill_is_chunked(mechanism_cell("retnet", 8, 128, 1, DType::bfloat16)));
  EXPECT_FALSE(retnet_cuda_prefill_is_chunked(mechanism_cell("retnet", 8, 64, 1000, DType::float32)))
      << "fp32 keeps the recurrence: tf32 would break 1e-4";
  EXPECT_FALSE(retnet_cuda_prefill_is_chunked(mechanism_cell("retnet", 8, 64, 1000, DType::bfloat16, Phase::decode)));
  EXPECT_FALSE(retnet_cuda_prefill_is_chunked(mechanism_cell("retnet", 8, 100, 1000, DType::bfloat16)));
  EXPECT_FALSE(retnet_cuda_prefill_is_chunked(mechanism_cell("retnet", 8, 256, 1000, DType::bfloat16)));
  EXPECT_EQ(retnet_cuda_workspace_bytes(mechanism_cell("retnet", 8, 64, 1000, DType::float32)), 0);
  const Cell cell = mechanism_cell("retnet", 8, 64, 1000, DType::bfloat16, Phase::prefill, 2);
  EXPECT_FALSE(retnet_cuda_unsupported(cell).has_value());
  EXPECT_EQ(retnet_cuda_workspace_bytes(cell), 2 * 16 * 16 * 64 * 64 + 4 * 16 * 16);  // bf16 states
}

TEST(ChunkScalarDecayPlan, RetNetPeakPredictionCountsTheChunkWorkspace) {
  const Mechanism* retnet = find_mechanism("retnet");
  ASSERT_NE(retnet, nullptr);
  const Cell bf16_cell = mechanism_cell("retnet", 8, 64, 1000, DType::bfloat16, Phase::prefill, 2);
  const std::int64_t io = 4 * 1000 * 16 * 64 * 2, state = 16 * 64 * 64 * 4;
  EXPECT_EQ(retnet->predicted_peak_bytes(bf16_cell), state + io + retnet_cuda_workspace_bytes(bf16_cell));
  const Cell fp32_cell = mechanism_cell("retnet", 8, 64, 1000, DType::float32, Phase::prefill, 2);
  EXPECT_EQ(retnet->predicted_peak_bytes(fp32_cell), state + 2 * io) << "the recurrence has no workspace";
}

Cell mamba2_cell(std::int64_t dim, std::int64_t n, DType dtype, Phase phase = Phase::prefill) {
  Cell cell = mechanism_cell("mamba2", 8, dim, 1000, dtype, phase, 2);
  cell.options.set("state_size", n);
  return cell;
}

TEST(ChunkScalarDecayPlan, Mamba2RunsItForBf16PrefillWithStateAsKeysAndHeadAsValues) {
  EXPECT_TRUE(mamba2_cuda_prefill_is_chunked(mamba2_cell(64, 128, DType::bfloat16)));  // the published shape
  EXPECT_FALSE(mamba2_cuda_prefill_is_chunked(mamba2_cell(64, 128, DType::float32)));
  EXPECT_FALSE(mamba2_cuda_prefill_is_chunked(mamba2_cell(64, 128, DType::bfloat16, Phase::decode)));
  EXPECT_FALSE(mamba2_cuda_prefill_is_chunked(mamba2_cell(64, 40, DType::bfloat16)));
  EXPECT_FALSE(mamba2_cuda_prefill_is_chunked(mamba2_cell(256, 128, DType::bfloat16)));
  const Cell cell = mamba2_cell(64, 128, DType::bfloat16);
  const ChunkScalarDecayPlan plan = mamba2_chunked_prefill_plan(cell);
  EXPECT_EQ(plan.dk, 128);  // S = H^T [N, P]: k = B_t over N, v = dt x over P
  EXPECT_EQ(plan.dv, 64);
  EXPECT_EQ(plan.batch_heads, 16);
  EXPECT_EQ(mamba2_cuda_workspace_bytes(cell), 2 * 16 * 16 * 128 * 64 + 4 * 16 * 16);  // bf16 states
  EXPECT_FALSE(mamba2_cuda_unsupported(cell).has_value());
  EXPECT_EQ(mamba2_cuda_workspace_bytes(mamba2_cell(64, 128, DType::float32)), 0);
}

TEST(ChunkScalarDecayPlan, Mamba2PeakPredictionCountsTheChunkWorkspace) {
  const Mechanism* mamba2 = find_mechanism("mamba2");
  ASSERT_NE(mamba2, nullptr);
  const Cell cell = mamba2_cell(64, 128, DType::bfloat16);  // batch 2, 8 heads, one group, L 1000
  const std::int64_t workspace = mamba2_cuda_workspace_bytes(cell);
  ASSERT_GT(workspace, 0);
  // What the CUDA prefill cell allocates besides its parameters: x, z, out [16, L, 64], dt_raw
  // [16, L], B, C [2, L, 128] in bf16, the state, and the chunk workspace.
  const std::int64_t sequence = 2 * (3 * 16 * 1000 * 64 + 16 * 1000 + 2 * 2 * 1000 * 128);
  EXPECT_GE(mamba2->predicted_peak_bytes(cell), mamba2->state_bytes(cell) + sequence + workspace);
}

}  // namespace
}  // namespace arch_bench
