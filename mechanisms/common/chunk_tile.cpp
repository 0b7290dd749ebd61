#include "mechanisms/common/chunk_tile.hpp"

#include "core/checked_size.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"

namespace arch_bench {

ChunkwiseGrid plan_chunkwise_grid(std::int64_t batch_heads, std::int64_t tokens, std::int64_t width, std::int64_t dv) {
  ChunkwiseGrid grid;
  grid.chunks = ceil_div(tokens, kChunkTile);
  grid.key_tiles = ceil_div(width, kChunkTile);
  grid.value_tiles = ceil_div(dv, kChunkTile);
  grid.state_blocks = checked_product(batch_heads, grid.chunks, grid.key_tiles, grid.value_tiles);
  grid.prefix_elements = checked_add(checked_mul(width, dv), width);
  grid.prefix_blocks = checked_mul(batch_heads, ceil_div(grid.prefix_elements, kChunkTileThreads));
  grid.output_blocks = checked_product(batch_heads, grid.chunks, grid.value_tiles);
  return grid;
}

}  // namespace arch_bench
