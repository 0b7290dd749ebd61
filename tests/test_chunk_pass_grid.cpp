// The launch geometry the two-kernel chunkwise prefills share (mechanisms/common/chunk_pass_grid.hpp),
// on its own: head sizes on the wmma grid, the grid fields, and layouts
// placed in the order of their fields. The plans that use it are tested in
// test_chunk_delta_rule_plan.cpp and test_rwkv7_chunk_plan.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "mechanisms/common/chunk_pass_grid.hpp"

namespace arch_bench {
namespace {

TEST(ChunkPassGrid, HeadSizesAreWholeWmmaTilesUpToTheLimit) {
  for (std::int64_t d = -16; d <= 300; ++d) {
    EXPECT_EQ(fits_wmma_tiles(d, 16, 128), d >= 16 && d <= 128 && d % 16 == 0) << d;
  }
}

struct GridOnly {
  std::int64_t batch_heads = 0, tokens = 0, chunks = 0, prepare_blocks = 0;
  int value_tile = 0, value_tiles = 0;
  std::int64_t pass_blocks = 0;
};

TEST(ChunkPassGrid, GridIsOneBlockPerHeadAndChunkThenPerHeadAndValueTile) {
  GridOnly plan;
  place_chunk_pass_grid(plan, 6, 65, 32, 96, 32);
  EXPECT_EQ(plan.batch_heads, 6);
  EXPECT_EQ(plan.tokens, 65);
  EXPECT_EQ(plan.chunks, 3);  // 32 + 32 + 1
  EXPECT_EQ(plan.prepare_blocks, 18);
  EXPECT_EQ(plan.value_tile, 32);
  EXPECT_EQ(plan.value_tiles, 3);
  EXPECT_EQ(plan.pass_blocks, 18);
  place_chunk_pass_grid(plan, 6, 0, 32, 96, 32);
  EXPECT_EQ(plan.chunks, 0);
  EXPECT_EQ(plan.prepare_blocks, 0);
}

struct ThreeRegions {
  std::size_t a = 0, b = 0, c = 0;
  std::size_t bytes = 0;
};

TEST(ChunkPassGrid, LayoutRegionsFollowTheFieldsEach128ByteAligned) {
  const ThreeRegions layout = place_shared_layout<ThreeRegions>(100, std::size_t{256}, 4);
  EXPECT_EQ(layout.a, 0u);
  EXPECT_EQ(layout.b, 128u);  // 100 rounded up
  EXPECT_EQ(layout.c, 384u);  // 128 + 256
  EXPECT_EQ(layout.bytes, 388u);
  EXPECT_EQ(tile_bytes(64, 72, 2), 64u * 72u * 2u);
}

}  // namespace
}  // namespace arch_bench
