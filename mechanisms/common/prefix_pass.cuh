#pragma once
// The prefix stage of the chunkwise CUDA prefills of linear attention and Performer, written once:
// an exclusive scan over chunks, in place, one thread per element of a head's (S, z) (elements
// [0, rows * dv) are S, then z; chunk_tile.hpp's chunk_prefix_element). The carried-in state is the
// scan's start and its total becomes the new state. Loads are issued a batch at a time so that the
// sequential chain is not one memory latency per chunk.
#include <cstdint>

namespace arch_bench {

// fold(running, u, chunk) is the state entering chunk + 1 from the one entering `chunk` (running)
// and the chunk's own contribution u: running + u for linear attention, a rescaled sum for
// Performer. It is called once per chunk, in order.
template <class Fold>
__device__ __forceinline__ void exclusive_chunk_prefix(float* __restrict__ chunk_states,
                                                       float* __restrict__ chunk_sums, float* __restrict__ state,
                                                       float* __restrict__ normalizer, int rows, int dv,
                                                       std::int64_t chunks, std::int64_t bh, std::int64_t e,
                                                       Fold fold) {
  const std::int64_t state_elements = static_cast<std::int64_t>(rows) * dv;
  if (e >= state_elements + rows) return;
  float* carried;
  float* column;
  std::int64_t stride;
  if (e < state_elements) {
    carried = state + bh * state_elements + e;
    column = chunk_states + bh * chunks * state_elements + e;
    stride = state_elements;
  } else {
    carried = normalizer + bh * rows + (e - state_elements);
    column = chunk_sums + bh * chunks * rows + (e - state_elements);
    stride = rows;
  }
  constexpr int kBatch = 8;
  float running = *carried;
  for (std::int64_t c0 = 0; c0 < chunks; c0 += kBatch) {
    float local[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) local[b] = c0 + b < chunks ? column[(c0 + b) * stride] : 0.0f;
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (c0 + b < chunks) {
        column[(c0 + b) * stride] = running;
        running = fold(running, local[b], c0 + b);
      }
    }
  }
  *carried = running;
}

}  // namespace arch_bench
