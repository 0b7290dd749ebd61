#pragma once
// The tile geometry of the chunkwise CUDA prefills of linear attention and Performer
// (chunk_state_tile.cuh, prefix_pass.cuh): which block computes which tile, which elements a thread
// holds, and the shared-memory layouts. Plain constexpr C++, so each mechanism's cuda_plan tests
// check on the CPU the very maps its kernels use (device code calls them with
// --expt-relaxed-constexpr).
//
// A chunk is 64 tokens; state tiles are 64 x 64 elements of S; the output kernel walks the key (or
// feature) dimension in steps of 32. 256 threads hold a 64 x 64 tile as 16 x 16 threads with 4 x 4
// elements each, at rows ty + 16a and columns tx + 16b, so that a warp's 16 consecutive tx touch 16
// consecutive columns (coalesced in global memory, conflict-free in shared memory).
#include <cstdint>

namespace arch_bench {

inline constexpr int kChunkTileThreads = 256;
inline constexpr int kChunkTile = 64;
inline constexpr int kChunkTileStep = 32;
inline constexpr int kChunkTilePad = 1;  // one float of padding per shared row breaks bank conflicts
// Elements of the 4 x 4 register tile a thread holds, per side.
inline constexpr int kChunkTileRegisters = 4;
static_assert(kChunkTileThreads == (kChunkTile / kChunkTileRegisters) * (kChunkTile / kChunkTileRegisters));

// Which (head, chunk, 64 x 64 tile) a block of the chunk-state or output stage computes (value
// tile fastest).
struct ChunkTile {
  std::int64_t bh = 0;
  std::int64_t chunk = 0;
  std::int64_t key_tile = 0;  // always 0 in the output stage, which loops over the key dimension
  std::int64_t value_tile = 0;
};
constexpr ChunkTile chunk_state_block(std::int64_t block, std::int64_t chunks, std::int64_t key_tiles,
                                      std::int64_t value_tiles) {
  ChunkTile tile;
  tile.value_tile = block % value_tiles;
  block /= value_tiles;
  tile.key_tile = block % key_tiles;
  block /= key_tiles;
  tile.chunk = block % chunks;
  tile.bh = block / chunks;
  return tile;
}
constexpr ChunkTile chunk_output_block(std::int64_t block, std::int64_t chunks, std::int64_t value_tiles) {
  return chunk_state_block(block, chunks, 1, value_tiles);
}
// The elements of a tile that thread `thread` holds: rows ty + 16a, columns tx + 16b.
constexpr int chunk_tile_row(int thread, int a) { return thread / 16 + 16 * a; }
constexpr int chunk_tile_column(int thread, int b) { return thread % 16 + 16 * b; }
// Tokens of chunk `chunk` (64, or fewer in the last chunk).
constexpr int chunk_rows(std::int64_t tokens, std::int64_t chunk) {
  return tokens - chunk * kChunkTile < kChunkTile ? static_cast<int>(tokens - chunk * kChunkTile) : kChunkTile;
}

// The prefix stage: head and element of (S, z) of a thread (elements [0, rows * dv) are S, then z).
struct ChunkPrefixElement {
  std::int64_t bh = 0;
  std::int64_t element = 0;
};
constexpr ChunkPrefixElement chunk_prefix_element(std::int64_t block, int thread, std::int64_t blocks_per_head,
                                                  int threads) {
  return {block / blocks_per_head, (block % blocks_per_head) * threads + thread};
}

// The grid of the chunk-state, prefix and output stages over `batch_heads` heads of `tokens` tokens
// and a state of `width` rows (dk, or Performer's m) by dv columns: what chunk_state_block,
// chunk_prefix_element and chunk_output_block decode. A mechanism's prefill plan is this grid and
// what is its own (plan_chunkwise_grid, chunk_tile.cpp: every product checked, SizeOverflow rather
// than a wrap).
struct ChunkwiseGrid {
  std::int64_t chunks = 0;           // ceil(tokens / 64)
  std::int64_t key_tiles = 0;        // ceil(width / 64)
  std::int64_t value_tiles = 0;      // ceil(dv / 64)
  std::int64_t state_blocks = 0;     // batch_heads * chunks * key_tiles * value_tiles
  std::int64_t prefix_elements = 0;  // per head: width * dv + width
  std::int64_t prefix_blocks = 0;    // batch_heads * ceil(prefix_elements / kChunkTileThreads)
  std::int64_t output_blocks = 0;    // batch_heads * chunks * value_tiles
};
ChunkwiseGrid plan_chunkwise_grid(std::int64_t batch_heads, std::int64_t tokens, std::int64_t width, std::int64_t dv);

// Shared memory of the chunk-state kernel (floats): the key side [64][64] and V_c [64][64].
struct ChunkStateSharedLayout {
  static constexpr int k = 0;
  static constexpr int v = k + kChunkTile * kChunkTile;
  static constexpr int floats = v + kChunkTile * kChunkTile;
};

// Shared memory of the output kernel (floats). The key loop and the masked A V product run one
// after the other, so their regions overlap; the per-row denominators sit after both. A mechanism
// that needs more per-row values puts them from `floats` on.
struct ChunkOutputSharedLayout {
  // key loop: Q side [64][33], K side [64][33], S_in rows [32][64], z_in [32]
  static constexpr int q = 0;
  static constexpr int k = q + kChunkTile * (kChunkTileStep + kChunkTilePad);
  static constexpr int s = k + kChunkTile * (kChunkTileStep + kChunkTilePad);
  static constexpr int z = s + kChunkTileStep * kChunkTile;
  static constexpr int loop_end = z + kChunkTileStep;
  // A V product: masked A [64][65], V [64][64]
  static constexpr int a = 0;
  static constexpr int v = a + kChunkTile * (kChunkTile + kChunkTilePad);
  static constexpr int product_end = v + kChunkTile * kChunkTile;
  static constexpr int denominator = loop_end > product_end ? loop_end : product_end;  // [64]
  static constexpr int floats = denominator + kChunkTile;
};

}  // namespace arch_bench
