// The chunkwise CUDA prefills' common tile geometry (mechanisms/common/chunk_tile.hpp), on the CPU:
// the grid and the thread maps the kernels of linear attention and Performer use (the same
// constexpr maps, replayed here) cover every element exactly once, and the shared layouts fit
// without an opt-in and do not overlap. Each mechanism's plan test checks that its plan is this grid.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "mechanisms/common/chunk_tile.hpp"

namespace arch_bench {
namespace {

constexpr std::size_t kSharedWithoutOptIn = 48 * 1024;

bool all_once(const std::vector<int>& touched) {
  return std::all_of(touched.begin(), touched.end(), [](int n) { return n == 1; });
}

struct Dims {
  std::int64_t width, dv;
};

TEST(ChunkTile, GridCountsChunksTilesAndBlocks) {
  const ChunkwiseGrid grid = plan_chunkwise_grid(3, 130, 80, 200);
  EXPECT_EQ(grid.chunks, 3);
  EXPECT_EQ(grid.key_tiles, 2);
  EXPECT_EQ(grid.value_tiles, 4);
  EXPECT_EQ(grid.state_blocks, 3 * 3 * 2 * 4);
  EXPECT_EQ(grid.prefix_elements, 80 * 200 + 80);
  EXPECT_EQ(grid.prefix_blocks, 3 * ((80 * 200 + 80 + kChunkTileThreads - 1) / kChunkTileThreads));
  EXPECT_EQ(grid.output_blocks, 3 * 3 * 4);
  const ChunkwiseGrid empty = plan_chunkwise_grid(3, 0, 64, 64);
  EXPECT_EQ(empty.chunks, 0);
  EXPECT_EQ(empty.state_blocks, 0);
  EXPECT_EQ(empty.output_blocks, 0);
}

// The chunk-state stage writes every element of every per-chunk state and key sum exactly once.
TEST(ChunkTile, StateTilesCoverTheChunkWorkspaceExactlyOnce) {
  for (const Dims d : {Dims{1, 1}, Dims{16, 16}, Dims{64, 64}, Dims{80, 200}, Dims{100, 16}, Dims{256, 256}}) {
    const std::int64_t heads = 2, tokens = 130;
    const ChunkwiseGrid grid = plan_chunkwise_grid(heads, tokens, d.width, d.dv);
    std::vector<int> states(static_cast<std::size_t>(heads * grid.chunks * d.width * d.dv), 0);
    std::vector<int> sums(static_cast<std::size_t>(heads * grid.chunks * d.width), 0);
    for (std::int64_t block = 0; block < grid.state_blocks; ++block) {
      const ChunkTile tile = chunk_state_block(block, grid.chunks, grid.key_tiles, grid.value_tiles);
      ASSERT_LT(tile.bh, heads);
      const std::int64_t base = tile.bh * grid.chunks + tile.chunk;
      for (int t = 0; t < kChunkTileThreads; ++t) {
        for (int a = 0; a < 4; ++a) {
          const std::int64_t i = tile.key_tile * kChunkTile + chunk_tile_row(t, a);
          if (i >= d.width) continue;
          for (int b = 0; b < 4; ++b) {
            const std::int64_t j = tile.value_tile * kChunkTile + chunk_tile_column(t, b);
            if (j < d.dv) ++states[static_cast<std::size_t>((base * d.width + i) * d.dv + j)];
          }
        }
        const std::int64_t i = tile.key_tile * kChunkTile + t;
        if (tile.value_tile == 0 && t < kChunkTile && i < d.width) ++sums[static_cast<std::size_t>(base * d.width + i)];
      }
    }
    EXPECT_TRUE(all_once(states)) << d.width << "x" << d.dv;
    EXPECT_TRUE(all_once(sums)) << d.width << "x" << d.dv;
  }
}

// The prefix stage runs exactly one thread per element of S and z of every head.
TEST(ChunkTile, PrefixThreadsCoverStateAndNormalizerExactlyOnce) {
  for (const Dims d : {Dims{1, 1}, Dims{64, 64}, Dims{80, 200}, Dims{96, 48}}) {
    const std::int64_t heads = 3;
    const ChunkwiseGrid grid = plan_chunkwise_grid(heads, 100, d.width, d.dv);
    EXPECT_EQ(grid.prefix_blocks % heads, 0);
    const std::int64_t per_head = grid.prefix_blocks / heads;
    std::vector<int> touched(static_cast<std::size_t>(heads * grid.prefix_elements), 0);
    for (std::int64_t block = 0; block < grid.prefix_blocks; ++block) {
      for (int t = 0; t < kChunkTileThreads; ++t) {
        const ChunkPrefixElement at = chunk_prefix_element(block, t, per_head, kChunkTileThreads);
        if (at.element >= d.width * d.dv + d.width) continue;  // the kernel returns
        ++touched[static_cast<std::size_t>(at.bh * grid.prefix_elements + at.element)];
      }
    }
    EXPECT_TRUE(all_once(touched)) << d.width << "x" << d.dv;
  }
}

// The output stage writes every output element of every valid token exactly once, none past the end.
TEST(ChunkTile, OutputTilesCoverEveryTokenExactlyOnce) {
  for (const std::int64_t tokens : {1, 63, 64, 65, 130}) {
    for (const std::int64_t dv : {16, 64, 100, 256}) {
      const std::int64_t heads = 2;
      const ChunkwiseGrid grid = plan_chunkwise_grid(heads, tokens, 32, dv);
      std::vector<int> touched(static_cast<std::size_t>(heads * tokens * dv), 0);
      for (std::int64_t block = 0; block < grid.output_blocks; ++block) {
        const ChunkTile tile = chunk_output_block(block, grid.chunks, grid.value_tiles);
        const int rows = chunk_rows(tokens, tile.chunk);
        for (int t = 0; t < kChunkTileThreads; ++t) {
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
      EXPECT_TRUE(all_once(touched)) << "tokens " << tokens << " dv " << dv;
    }
  }
}

TEST(ChunkTile, ChunkRowsCountEveryTokenOnce) {
  for (const std::int64_t tokens : {1, 63, 64, 65, 128, 130}) {
    const ChunkwiseGrid grid = plan_chunkwise_grid(1, tokens, 64, 64);
    std::int64_t rows = 0;
    for (std::int64_t chunk = 0; chunk < grid.chunks; ++chunk) rows += chunk_rows(tokens, chunk);
    EXPECT_EQ(rows, tokens);
    EXPECT_EQ(chunk_rows(tokens, grid.chunks - 1), tokens - (grid.chunks - 1) * kChunkTile);
  }
}

TEST(ChunkTile, TileMapsCoverA64By64TileWithConsecutiveColumnsPerWarp) {
  std::vector<int> touched(kChunkTile * kChunkTile, 0);
  for (int t = 0; t < kChunkTileThreads; ++t) {
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) ++touched[chunk_tile_row(t, a) * kChunkTile + chunk_tile_column(t, b)];
    }
  }
  EXPECT_TRUE(all_once(touched));
  // Coalescing: the first 16 lanes of a warp read 16 consecutive columns of one row.
  for (int lane = 1; lane < 16; ++lane) {
    EXPECT_EQ(chunk_tile_column(lane, 0), chunk_tile_column(lane - 1, 0) + 1);
    EXPECT_EQ(chunk_tile_row(lane, 0), chunk_tile_row(0, 0));
  }
}

TEST(ChunkTile, SharedMemoryLayoutsFitWithoutOptInAndDoNotOverlap) {
  using L = ChunkOutputSharedLayout;
  constexpr int qk_row = kChunkTileStep + kChunkTilePad;
  // During the key loop the Q and K tiles, S_in and z_in are live together: disjoint, in order.
  EXPECT_LE(L::q + kChunkTile * qk_row, L::k);
  EXPECT_LE(L::k + kChunkTile * qk_row, L::s);
  EXPECT_LE(L::s + kChunkTileStep * kChunkTile, L::z);
  EXPECT_LE(L::z + kChunkTileStep, L::denominator);
  // During A V, A and V are live together, and the denominators throughout.
  EXPECT_LE(L::a + kChunkTile * (kChunkTile + kChunkTilePad), L::v);
  EXPECT_LE(L::v + kChunkTile * kChunkTile, L::denominator);
  EXPECT_EQ(L::denominator + kChunkTile, L::floats);
  EXPECT_LE(sizeof(float) * L::floats, kSharedWithoutOptIn);
  using S = ChunkStateSharedLayout;
  EXPECT_LE(S::k + kChunkTile * kChunkTile, S::v);
  EXPECT_LE(S::v + kChunkTile * kChunkTile, S::floats);
  EXPECT_LE(sizeof(float) * S::floats, kSharedWithoutOptIn);
}

}  // namespace
}  // namespace arch_bench
