#pragma once
// How a double-buffered chunkwise pass kernel (one block per (head, value tile) walking the chunks in
// order: common/chunk_delta_rule.cuh, rwkv/rwkv7/chunk_cuda.cu) occupies an sm_90 device, and the
// cost its value-tile choice compares. Plain C++: the plans are compiled in every build and tested
// on the CPU.
//
// The pass is sequential over chunks, so its time is (chunks) x (one chunk's chain) x (the grid's
// waves). A chunk's chain is dominated by each warp's wmma steps (a warp's output tiles run one
// after another, each a dependent chain of 16 x 16 x 16 steps); its operand copies are issued a
// chunk ahead and overlap it. The cost is therefore waves x the wmma steps in one warp's chain.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "mechanisms/common/cuda_launch_limits.hpp"

namespace arch_bench {

// An sm_90 multiprocessor's shared memory, the 1 KiB the runtime reserves per resident block, and
// its resident threads (CUDA C++ Programming Guide, "Technical Specifications per Compute
// Capability", 9.0).
inline constexpr std::size_t kSm90SharedBytesPerSm = 228 * 1024;
inline constexpr std::size_t kSm90SharedReservedPerBlock = 1024;
inline constexpr int kSm90ThreadsPerSm = 2048;

// Blocks of `threads` threads and `shared_bytes` of dynamic shared memory an sm_90 multiprocessor
// holds at once: the fewer of what its shared memory and its threads allow (registers are not
// binding for these kernels: <= 64 a thread, ptxas -v).
constexpr int chunk_pass_blocks_per_sm(std::size_t shared_bytes, int threads) {
  const std::size_t by_shared = kSm90SharedBytesPerSm / (shared_bytes + kSm90SharedReservedPerBlock);
  const std::size_t by_threads = static_cast<std::size_t>(kSm90ThreadsPerSm / threads);
  return static_cast<int>(by_shared < by_threads ? by_shared : by_threads);
}

// Waves of a grid of `blocks` on `multiprocessors` holding `blocks_per_sm` each (at least 1).
constexpr std::int64_t chunk_pass_waves(std::int64_t blocks, int multiprocessors, int blocks_per_sm) {
  const std::int64_t slots =
      static_cast<std::int64_t>(multiprocessors > 1 ? multiprocessors : 1) * (blocks_per_sm > 1 ? blocks_per_sm : 1);
  const std::int64_t waves = ceil_div(blocks, slots);
  return waves > 1 ? waves : 1;
}

// One product of a chunk: `output_tiles` wmma tiles over the block's warps (tile w to warp w mod
// warps), each a chain of `steps` wmma steps.
struct ChunkPassProduct {
  std::int64_t output_tiles;
  std::int64_t steps;
};

// The wmma steps in the longest warp's chain over a chunk's products, in order.
constexpr std::int64_t chunk_pass_warp_steps(std::initializer_list<ChunkPassProduct> products, int warps) {
  std::int64_t steps = 0;
  for (const ChunkPassProduct& p : products) steps += ceil_div(p.output_tiles, warps) * p.steps;
  return steps;
}

// Of `widths` (widest first) dividing `width`, the one of least cost(tile), the widest of equals
// (each of a head's tiles re-reads the chunk's shared operands: a wider tile reads them fewer times).
// multiprocessors <= 0: the widest dividing `width`.
template <class Widths, class Cost>
int cheapest_chunk_pass_tile(const Widths& widths, std::int64_t width, int multiprocessors, const Cost& cost) {
  int best = 0;
  std::int64_t best_cost = 0;
  for (const int tile : widths) {
    if (width % tile != 0) continue;
    if (multiprocessors <= 0) return tile;
    const std::int64_t c = cost(tile);
    if (best == 0 || c < best_cost) {
      best = tile;
      best_cost = c;
    }
  }
  return best;
}

}  // namespace arch_bench
