#pragma once
// The running max M at a chunk's edges, as stages 3-5 of Performer's CUDA prefill read it from the
// row maxima of stage 2 (cuda.cu's SIMT kernels and cuda_tensor_core_chunks.cu's tensor-core ones
// read the same values, so both paths weight and rescale alike).
#include <cstdint>

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

}  // namespace arch_bench
