// linear_attention CUDA launch planning, on the CPU: the grids and thread maps the kernels use
// (the same constexpr index maps, replayed here) cover every element exactly once, chunk counts,
// workspace and shared memory sizes, and the cells the kernels refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/checked_size.hpp"
#include "mechanisms/linear_attention/cuda_plan.hpp"
#include "mechanisms/registry.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

constexpr std::size_t kSharedWithoutOptIn = 48 * 1024;

struct Dims {
  std::int64_t dk, dv;
};
const std::vector<Dims> kDims = {{1, 1}, {3, 5}, {16, 16}, {31, 31}, {32, 32}, {48, 48},
                                 {64, 64}, {100, 100}, {128, 128}, {80, 200}, {256, 256}};

TEST(LinearAttentionCudaPlan, DecodeTouchesEveryStateElementExactlyOnce) {
  for (const Dims d : kDims) {
    const LinearDecodePlan plan = plan_linear_attention_decode(3, d.dk, d.dv);
    std::vector<int> touched(static_cast<std::size_t>(d.dk * d.dv), 0);
    for (int t = 0; t < plan.threads; ++t) {
      const int j = linear_decode_column(plan, t), group = linear_decode_group(plan, t);
      if (group >= plan.row_groups) continue;  // the kernel's idle threads
      ASSERT_LT(j, d.dv);
      for (std::int64_t i = group; i < d.dk; i += plan.row_groups) ++touched[static_cast<std::size_t>(i * d.dv + j)];
    }
    EXPECT_TRUE(std::all_of(touched.begin(), touched.end(), [](int n) { return n == 1; }))
        << "dk " << d.dk << " dv " << d.dv;
    EXPECT_EQ(plan.blocks, 3);  // one block per head owns its S and z
  }
}

TEST(LinearAttentionCudaPlan, DecodeBlocksAreWholeWarpsWithinTheKernelBound) {
  for (std::int64_t d = 1; d <= kLinearCudaMaxHeadDim; ++d) {
    const LinearDecodePlan plan = plan_linear_attention_decode(8, d, d);
    EXPECT_EQ(plan.threads % 32, 0) << d;  // the denominator is a full-warp shuffle
    EXPECT_GE(plan.threads, 32) << d;
    EXPECT_LE(plan.threads, kLinearDecodeMaxThreads) << d;
    EXPECT_GE(plan.row_groups, 1) << d;
    EXPECT_LE(plan.row_groups, d) << d;
    EXPECT_GE(plan.threads, plan.columns * plan.row_groups) << d;
    EXPECT_LE(plan.shared_bytes, kSharedWithoutOptIn) << d;
    // phi(q), phi(k), phi(q) z, v, the partial numerators and the denominator all fit.
    EXPECT_GE(plan.shared_bytes, sizeof(float) * (3 * d + d + plan.row_groups * d + 1)) << d;
  }
  // A 64-wide head (the seed's shape) runs 4 row groups of 64 columns: a full 256-thread block.
  const LinearDecodePlan seed = plan_linear_attention_decode(8, 64, 64);
  EXPECT_EQ(seed.row_groups, 4);
  EXPECT_EQ(seed.threads, 256);
}

TEST(LinearAttentionCudaPlan, ChunkCountsAndLastChunkRows) {
  struct Case {
    std::int64_t tokens, chunks, last_rows;
  };
  for (const Case c : {Case{1, 1, 1}, Case{63, 1, 63}, Case{64, 1, 64}, Case{65, 2, 1}, Case{1000, 16, 40},
                       Case{8192, 128, 64}}) {
    const LinearPrefillPlan plan = plan_linear_attention_prefill(2, c.tokens, 64, 64);
    EXPECT_EQ(plan.chunks, c.chunks) << c.tokens;
    EXPECT_EQ(chunk_rows(c.tokens, plan.chunks - 1), c.last_rows) << c.tokens;
    std::int64_t rows = 0;
    for (std::int64_t chunk = 0; chunk < plan.chunks; ++chunk) rows += chunk_rows(c.tokens, chunk);
    EXPECT_EQ(rows, c.tokens);
  }
  const LinearPrefillPlan empty = plan_linear_attention_prefill(2, 0, 64, 64);
  EXPECT_EQ(empty.chunks, 0);
  EXPECT_EQ(empty.state_blocks, 0);
  EXPECT_EQ(empty.output_blocks, 0);
  EXPECT_EQ(empty.workspace_bytes(), 0);
}

// Stage 1 writes every element of every per-chunk state and key sum exactly once.
TEST(LinearAttentionCudaPlan, ChunkStateTilesCoverTheWorkspaceExactlyOnce) {
  for (const Dims d : {Dims{16, 16}, Dims{64, 64}, Dims{80, 200}, Dims{256, 256}}) {
    const std::int64_t heads = 2, tokens = 130;
    const LinearPrefillPlan plan = plan_linear_attention_prefill(heads, tokens, d.dk, d.dv);
    std::vector<int> states(static_cast<std::size_t>(plan.workspace_state_elements), 0);
    std::vector<int> sums(static_cast<std::size_t>(plan.workspace_sum_elements), 0);
    for (std::int64_t block = 0; block < plan.state_blocks; ++block) {
      const ChunkTile tile = chunk_state_block(block, plan.chunks, plan.key_tiles, plan.value_tiles);
      ASSERT_LT(tile.bh, heads);
      const std::int64_t base = tile.bh * plan.chunks + tile.chunk;
      for (int t = 0; t < plan.threads; ++t) {
        for (int a = 0; a < 4; ++a) {
          const std::int64_t i = tile.key_tile * kChunkTile + chunk_tile_row(t, a);
          if (i >= d.dk) continue;
          for (int b = 0; b < 4; ++b) {
            const std::int64_t j = tile.value_tile * kChunkTile + chunk_tile_column(t, b);
            if (j < d.dv) ++states[static_cast<std::size_t>((base * d.dk + i) * d.dv + j)];
          }
        }
        const std::int64_t i = tile.key_tile * kChunkTile + t;
        if (tile.value_tile == 0 && t < kChunkTile && i < d.dk) ++sums[static_cast<std::size_t>(base * d.dk + i)];
      }
    }
    EXPECT_TRUE(std::all_of(states.begin(), states.end(), [](int n) { return n == 1; })) << d.dk << "x" << d.dv;
    EXPECT_TRUE(std::all_of(sums.begin(), sums.end(), [](int n) { return n == 1; })) << d.dk << "x" << d.dv;
  }
}

// Stage 2 runs exactly one thread per element of S and z of every head.
TEST(LinearAttentionCudaPlan, PrefixThreadsCoverStateAndNormalizerExactlyOnce) {
  for (const Dims d : {Dims{1, 1}, Dims{64, 64}, Dims{80, 200}}) {
    const std::int64_t heads = 3;
    const LinearPrefillPlan plan = plan_linear_attention_prefill(heads, 100, d.dk, d.dv);
    EXPECT_EQ(plan.prefix_blocks % heads, 0);
    const std::int64_t per_head = plan.prefix_blocks / heads;
    std::vector<int> touched(static_cast<std::size_t>(heads * plan.prefix_elements), 0);
    for (std::int64_t block = 0; block < plan.prefix_blocks; ++block) {
      for (int t = 0; t < plan.threads; ++t) {
        const ChunkPrefixElement at = chunk_prefix_element(block, t, per_head, plan.threads);
        if (at.element >= d.dk * d.dv + d.dk) continue;  // the kernel returns
        ++touched[static_cast<std::size_t>(at.bh * plan.prefix_elements + at.element)];
      }
    }
    EXPECT_TRUE(std::all_of(touched.begin(), touched.end(), [](int n) { return n == 1; })) << d.dk << "x" << d.dv;
  }
}

// Stage 3 writes every output element of every valid token exactly once, and none past the end.
TEST(LinearAttentionCudaPlan, OutputTilesCoverEveryTokenExactlyOnce) {
  for (const std::int64_t tokens : {1, 63, 64, 65, 130}) {
    for (const std::int64_t dv : {16, 64, 100, 256}) {
      const std::int64_t heads = 2;
      const LinearPrefillPlan plan = plan_linear_attention_prefill(heads, tokens, dv, dv);
      std::vector<int> touched(static_cast<std::size_t>(heads * tokens * dv), 0);
      for (std::int64_t block = 0; block < plan.output_blocks; ++block) {
        const ChunkTile tile = chunk_output_block(block, plan.chunks, plan.value_tiles);
        const int rows = chunk_rows(tokens, tile.chunk);
        for (int t = 0; t < plan.threads; ++t) {
          for (int a = 0; a < 4; ++a) {
            const int row = chunk_tile_row(t, a);
            if (row >= rows) continue;
            for (int b = 0; b < 4; ++b) {
              const std::int64_t j = tile.value_tile * kChunkTile + chunk_tile_column(t, b);
              if (j >= dv) continue;
              ++touched[static_cast<std::size_t>((tile.bh * tokens + tile.chunk * kChunkTile + row) * dv + j)];
            }
          }
        }
      }
      EXPECT_TRUE(std::all_of(touched.begin(), touched.end(), [](int n) { return n == 1; }))
          << "tokens " << tokens << " dv " << dv;
    }
  }
}

TEST(LinearAttentionCudaPlan, TileMapsCoverA64By64TileWithConsecutiveColumnsPerWarp) {
  std::vector<int> touched(kChunkTile * kChunkTile, 0);
  for (int t = 0; t < kLinearCudaThreads; ++t) {
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) ++touched[chunk_tile_row(t, a) * kChunkTile + chunk_tile_column(t, b)];
    }
  }
  EXPECT_TRUE(std::all_of(touched.begin(), touched.end(), [](int n) { return n == 1; }));
  // Coalescing: the first 16 lanes of a warp read 16 consecutive columns of one row.
  for (int lane = 1; lane < 16; ++lane) {
    EXPECT_EQ(chunk_tile_column(lane, 0), chunk_tile_column(lane - 1, 0) + 1);
    EXPECT_EQ(chunk_tile_row(lane, 0), chunk_tile_row(0, 0));
  }
}

TEST(LinearAttentionCudaPlan, SharedMemoryLayoutsFitWithoutOptInAndDoNotOverlap) {
  using L = ChunkOutputSharedLayout;
  constexpr int qk_row = kChunkTileStep + kChunkTilePad;
  // During the dk loop phi(Q), phi(K), S_in and z_in are live together: disjoint, in order.
  EXPECT_LE(L::q + kChunkTile * qk_row, L::k);
  EXPECT_LE(L::k + kChunkTile * qk_row, L::s);
  EXPECT_LE(L::s + kChunkTileStep * kChunkTile, L::z);
  EXPECT_LE(L::z + kChunkTileStep, L::denominator);
  // During A V, A and V are live together, and the denominators throughout.
  EXPECT_LE(L::a + kChunkTile * (kChunkTile + kChunkTilePad), L::v);
  EXPECT_LE(L::v + kChunkTile * kChunkTile, L::denominator);
  EXPECT_EQ(L::denominator + kChunkTile, L::floats);
  using S = ChunkStateSharedLayout;
  EXPECT_LE(S::k + kChunkTile * kChunkTile, S::v);
  EXPECT_LE(S::v + kChunkTile * kChunkTile, S::floats);

  for (const Dims d : kDims) {
    const LinearPrefillPlan plan = plan_linear_attention_prefill(8, 1000, d.dk, d.dv);
    EXPECT_EQ(plan.output_shared_bytes, sizeof(float) * L::floats);
    EXPECT_EQ(plan.state_shared_bytes, sizeof(float) * S::floats);
    EXPECT_LE(plan.output_shared_bytes, kSharedWithoutOptIn);
    EXPECT_LE(plan.state_shared_bytes, kSharedWithoutOptIn);
  }
}

TEST(LinearAttentionCudaPlan, WorkspaceHoldsOneStateAndKeySumPerChunk) {
  // The seed's largest prefill: 8 heads, L = 8192 (128 chunks), head_dim 64.
  Cell cell = testing::small_cell(8, 64, 8192, DType::bfloat16, Phase::prefill);
  EXPECT_EQ(linear_attention_cuda_workspace_bytes(cell), 8LL * 128 * (64 * 64 + 64) * 4);
  cell.sequence_length = 65;  // a partial second chunk still needs its own state
  EXPECT_EQ(linear_attention_cuda_workspace_bytes(cell), 8LL * 2 * (64 * 64 + 64) * 4);
  cell.phase = Phase::decode;  // the decode cell holds no workspace (context staging is freed)
  EXPECT_EQ(linear_attention_cuda_workspace_bytes(cell), 0);
  cell.phase = Phase::prefill;
  cell.sequence_length = std::int64_t{1} << 62;
  EXPECT_THROW(linear_attention_cuda_workspace_bytes(cell), SizeOverflow);
}

TEST(LinearAttentionCudaPlan, UnsupportedCells) {
  Cell cell = testing::small_cell(8, 64, 512, DType::bfloat16, Phase::prefill);
  EXPECT_FALSE(linear_attention_cuda_unsupported(cell));
  cell.head_dim = 1;
  EXPECT_FALSE(linear_attention_cuda_unsupported(cell));
  cell.head_dim = 256;
  EXPECT_FALSE(linear_attention_cuda_unsupported(cell));
  cell.head_dim = 257;
  ASSERT_TRUE(linear_attention_cuda_unsupported(cell));
  EXPECT_NE(linear_attention_cuda_unsupported(cell)->find("head_dim"), std::string::npos);
  cell.head_dim = 0;
  EXPECT_TRUE(linear_attention_cuda_unsupported(cell));
  // 2^40 tokens are 2^34 chunks per head: more blocks than a grid holds. Decode has no such grid.
  cell.head_dim = 64;
  cell.sequence_length = std::int64_t{1} << 40;
  ASSERT_TRUE(linear_attention_cuda_unsupported(cell));
  EXPECT_NE(linear_attention_cuda_unsupported(cell)->find("grid"), std::string::npos);
  cell.phase = Phase::decode;
  EXPECT_FALSE(linear_attention_cuda_unsupported(cell));
}

TEST(LinearAttentionCudaPlan, MechanismAsksThePlanOnlyForTheCudaBackend) {
  const Mechanism* linear = find_mechanism("linear_attention");
  ASSERT_NE(linear, nullptr);
  Cell cell = testing::small_cell(8, 257, 512, DType::bfloat16, Phase::prefill);
  EXPECT_TRUE(linear->unsupported_on(cell, "cuda"));
  EXPECT_FALSE(linear->unsupported_on(cell, "cpu"));
  cell.head_dim = 64;
  EXPECT_FALSE(linear->unsupported_on(cell, "cuda"));
  const std::vector<std::string>& backends = linear->info().backends;
  const bool has_cuda = std::find(backends.begin(), backends.end(), "cuda") != backends.end();
#if ARCH_BENCH_HAVE_CUDA
  EXPECT_TRUE(has_cuda);
#else
  EXPECT_FALSE(has_cuda);
#endif
}

}  // namespace
}  // namespace arch_bench
