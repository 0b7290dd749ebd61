#pragma once
// The running max M at a chunk's edges, as stages 3-5 of Performer's CUDA prefill read it from the
// row maxima of stage 2 (cuda.cu's SIMT kernels and cuda_tensor_core_chunks.cu's tensor-core ones
// read the same values, so both paths weight and rescale alike), and the weights both paths derive
// from them, written once here.
#include <cstdint>

#include "mechanisms/common/chunk_block_rows.cuh"
#include "mechanisms/common/chunk_tile.hpp"

namespace arch_bench {

// The M the state entering chunk `chunk` is relative to (the carried M before the first chunk).
__device__ __forceinline__ float chunk_entering_max(const float* row_max, const float* carried_max, std::int64_t bh,
                                                    std::int64_t tokens, std::int64_t chunk) {
  return chunk == 0 ? carried_max[bh] : row_max[bh * tokens + chunk * kChunkTile - 1];
}
// The M after the chunk's last token.
__device__ __forceinline__ float chunk_end_max(const float* row_max, std::int64_t bh, std::int64_t tokens,
                                               std::int64_t chunk) {
  const std::int64_t end = (chunk + 1) * kChunkTile < tokens ? (chunk + 1) * kChunkTile : tokens;
  return row_max[bh * tokens + end - 1];
}

// Stage 3's key weights e^(c_j - M_end) <= 1 of the block's chunk into weights[64] (0 past the
// sequence): relative to the chunk's last M, as stage 4 (or the tensor-core state scan) adds U_c. Threads < 64 write them; the
// caller synchronises before reading.
__device__ __forceinline__ void chunk_key_weights(float* weights, const float* key_scale, const float* row_max,
                                                  std::int64_t tokens, const ChunkBlockRows& at) {
  if (threadIdx.x < kChunkTile) {
    const int r = static_cast<int>(threadIdx.x);
    const float end_max = chunk_end_max(row_max, at.tile.bh, tokens, at.tile.chunk);
    weights[r] = r < at.rows ? expf(key_scale[at.token_row + r] - end_max) : 0.0f;
  }
}

// Stage 5's factors of each row r of the block's chunk: M_r, c_r and e^(M_in - M_r) (0 past the
// sequence). Threads < 64 write them; the caller synchronises before reading.
__device__ __forceinline__ void chunk_row_weights(float* maxima, float* scales, float* row_scale,
                                                  const float* key_scale, const float* row_max,
                                                  const float* carried_max, std::int64_t tokens,
                                                  const ChunkBlockRows& at) {
  if (threadIdx.x < kChunkTile) {
    const int r = static_cast<int>(threadIdx.x);
    const float entering = chunk_entering_max(row_max, carried_max, at.tile.bh, tokens, at.tile.chunk);
    const float own = r < at.rows ? row_max[at.token_row + r] : 0.0f;
    maxima[r] = own;
    scales[r] = r < at.rows ? key_scale[at.token_row + r] : 0.0f;
    // M_in <= M_r; M_in = -inf (no key before) multiplies a zero state.
    row_scale[r] = r < at.rows ? expf(entering - own) : 0.0f;
  }
}

// Stage 5's block set-up, the SIMT and tensor-core output kernels' alike: the block's chunk and, in
// shared memory, its rows' factors (chunk_row_weights; the caller synchronises before reading them).
__device__ __forceinline__ ChunkBlockRows performer_output_chunk(float* maxima, float* scales, float* row_scale,
                                                                 const float* key_scale, const float* row_max,
                                                                 const float* carried_max, std::int64_t tokens,
                                                                 std::int64_t chunks, int value_tiles) {
  const ChunkBlockRows at = chunk_block_rows(chunk_output_block(blockIdx.x, chunks, value_tiles), tokens, chunks);
  chunk_row_weights(maxima, scales, row_scale, key_scale, row_max, carried_max, tokens, at);
  return at;
}

}  // namespace arch_bench
