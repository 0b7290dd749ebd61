#pragma once
// Where a block of a chunkwise prefill's state or output stage (chunk_tile.hpp's grid: linear
// attention's and Performer's, SIMT and tensor-core alike) finds its chunk: the chunk's first token,
// how many of its 64 rows are inside the sequence, its first value column, and the offsets of its rows
// in the [bh][token][...] tensors and of its entry in the [bh][chunk][...] workspace. Written once
// so that every kernel of the grid addresses the same rows the same way.
#include <cuda/std/tuple>

#include <cstdint>

#include "mechanisms/common/chunk_tile.hpp"

namespace arch_bench {

struct ChunkBlockRows {
  ChunkTile tile;                // the block's head, chunk and tiles
  std::int64_t first = 0;        // the chunk's first token
  std::int64_t token_row = 0;    // bh * tokens + first: the chunk's first row of a [bh][token] tensor
  std::int64_t chunk_entry = 0;  // bh * chunks + chunk: the chunk's entry in a [bh][chunk] workspace
  int rows = 0;                  // tokens of the chunk inside the sequence (64, fewer in the last)
  int j0 = 0;                    // the first value column of the block's 64-column tile

  // The chunk's first row of a [bh][token][width] tensor.
  template <class T>
  __device__ __forceinline__ T* token_rows(T* tensor, int width) const {
    return tensor + token_row * width;
  }
  // The chunk's [rows][columns] entry of a [bh][chunk][rows][columns] workspace.
  template <class T>
  __device__ __forceinline__ T* chunk_entry_of(T* workspace, int rows_of_entry, int columns = 1) const {
    return workspace + chunk_entry * rows_of_entry * columns;
  }
};

__device__ __forceinline__ ChunkBlockRows chunk_block_rows(const ChunkTile& tile, std::int64_t tokens,
                                                           std::int64_t chunks) {
  ChunkBlockRows at;
  at.tile = tile;
  at.first = tile.chunk * kChunkTile;
  at.token_row = tile.bh * tokens + at.first;
  at.chunk_entry = tile.bh * chunks + tile.chunk;
  at.rows = chunk_rows(tokens, tile.chunk);
  at.j0 = static_cast<int>(tile.value_tile) * kChunkTile;
  return at;
}

// The output stage's operands of the block's chunk, in this order: its rows of the query and key
// features ([bh][token][width]) and of V ([bh][token][dv]), and the state and key sums entering it
// ([bh][chunk][width][dv], [bh][chunk][width]); for structured bindings.
template <class Feature, class Value>
__device__ __forceinline__ cuda::std::tuple<const Feature*, const Feature*, const Value*, const float*, const float*>
chunk_output_operands(const ChunkBlockRows& at, const Feature* q, const Feature* k, const Value* v,
                      const float* chunk_states, const float* chunk_sums, int width, int dv) {
  return {at.token_rows(q, width), at.token_rows(k, width), at.token_rows(v, dv),
          at.chunk_entry_of(chunk_states, width, dv), at.chunk_entry_of(chunk_sums, width)};
}

}  // namespace arch_bench
