#pragma once
// Launch planning of the CUDA kernels of the three RWKV generations (rwkv4/cuda.cu, rwkv6/cuda.cu,
// rwkv7/cuda.cu): grids, blocks, shared memory as plain functions, compiled in every build and
// tested on the CPU (tests/test_rwkv_cuda_plan.cpp). The kernels read their thread layout from the
// constexpr maps here, so the plan, the kernels and the tests cannot disagree about it.
//
// One kernel per generation serves both phases: a decode step is the scan over one token, in place
// on the fp32 state in global memory (read once and written once), and the prefill is the same
// scan over L tokens with the state held in registers between the read and the write.
//  - rwkv4 (per-channel state a, b, p): one thread per channel (bh, j), sequential in time with
//    the running-max (stable) recurrence, parallel over batch x heads x head_dim.
//  - rwkv6, rwkv7 (a dim x dim state per head): every value column of the state evolves on its own
//    (rwkv6: S[key][value], rwkv7: H[key][value], rwkv7/cpu.hpp), so a block owns
//    columns_per_block = threads / kRwkvCudaRowParts columns of one head. kRwkvCudaRowParts
//    consecutive lanes share one column, each holding the key rows part, part + 8, part + 16, ... in
//    registers; the sums over key rows (the read-out, and rwkv7's removed value a^T H) are three
//    shuffles inside those lanes. Per-token vectors (and the decays, exp'd once per token and
//    channel) are staged in shared memory a tile of tokens at a time.
//  - Spread over the SMs: a block has kRwkvCudaThreads threads, halved (down to one warp) while the
//    grid has fewer than two blocks per SM of the device, as the column recurrences do
//    (common/column_recurrence_plan.hpp): a decode step at batch 1 with 8 heads of 64 is 128
//    one-warp blocks rather than 32 of four warps (rwkv6/7), 16 rather than 4 (rwkv4).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/cell.hpp"
#include "mechanisms/rwkv/inputs.hpp"

namespace arch_bench {

inline constexpr int kRwkvCudaThreads = 128;    // the most threads per block (__launch_bounds__)
inline constexpr int kRwkvCudaMinThreads = 32;  // one warp: the fewest, when the grid is small
inline constexpr int kRwkvCudaRowParts = 8;     // lanes per value column: the read-out is 3 shuffles
inline constexpr std::int64_t kRwkvCudaMaxHeadDim = 256;
// Shared memory a tile of staged tokens may take (below the 48 KiB that needs no opt-in), and the
// most tokens per tile (a decode step stages one).
inline constexpr std::size_t kRwkvCudaTileBytes = 32 * 1024;
inline constexpr int kRwkvCudaMaxTokenTile = 16;
// Key rows each lane holds, as compiled: the smallest of these that covers ceil(dim / 8).
inline constexpr int kRwkvCudaRowCounts[] = {8, 16, 32};
static_assert(kRwkvCudaRowParts * 32 == kRwkvCudaMaxHeadDim, "the widest row count covers the widest head");
static_assert(32 % kRwkvCudaRowParts == 0, "a column's lanes stay inside one warp");

// The fp32 vectors a matrix-state generation stages per token and channel, in this order:
//   rwkv6: r, k, w = exp(max(-exp(d), -100)), r * u * k (the bonus's terms), v
//   rwkv7: r, k, w = exp(-e^{-0.5} sigmoid(w_raw)), a = -kappa, b = kappa * iclr, v
enum Rwkv6Staged : int { kRwkv6StagedR, kRwkv6StagedK, kRwkv6StagedW, kRwkv6StagedBonus, kRwkv6StagedV, kRwkv6StagedCount };
enum Rwkv7Staged : int { kRwkv7StagedR, kRwkv7StagedK, kRwkv7StagedW, kRwkv7StagedA, kRwkv7StagedB, kRwkv7StagedV, kRwkv7StagedCount };

struct RwkvScanPlan {
  RwkvVersion version = RwkvVersion::v6;
  std::int64_t batch_heads = 0;
  std::int64_t heads = 0;
  std::int64_t tokens = 0;
  int dim = 0;
  int threads = kRwkvCudaThreads;  // 128, 64 or 32: whole warps
  std::int64_t blocks = 0;
  // rwkv6/7 only: value columns per block (threads / kRwkvCudaRowParts), column blocks per head, key
  // rows per lane (a kRwkvCudaRowCounts entry), staged vectors per token and channel, tokens per
  // staged tile, and the tile's dynamic shared memory.
  int columns_per_block = 0;
  int column_blocks = 0;
  int rows_per_lane = 0;
  int staged_vectors = 0;
  int token_tile = 0;
  std::size_t shared_bytes = 0;
};

// Thread maps of the matrix-state kernels (constexpr: the kernels call them).
struct RwkvScanThread {
  std::int64_t bh;
  int column;  // value column; >= dim for the padding lanes of a head narrower than the block
  int part;    // first key row; the lane holds rows part + kRwkvCudaRowParts * q
};
constexpr RwkvScanThread rwkv_scan_thread(std::int64_t block, int thread, int column_blocks, int columns_per_block) {
  return {block / column_blocks,
          static_cast<int>(block % column_blocks) * columns_per_block + thread / kRwkvCudaRowParts,
          thread % kRwkvCudaRowParts};
}
constexpr int rwkv_scan_key_row(int part, int q) { return part + kRwkvCudaRowParts * q; }
// rwkv4: channel c = bh * dim + j of thread `thread` in block `block` of `threads`.
constexpr std::int64_t rwkv4_scan_channel(std::int64_t block, int thread, int threads) {
  return block * threads + thread;
}

// `multiprocessors` of the device spreads small grids over it (above); 0 keeps kRwkvCudaThreads.
RwkvScanPlan plan_rwkv_scan(RwkvVersion version, std::int64_t batch_heads, std::int64_t heads, std::int64_t tokens,
                            std::int64_t dim, int multiprocessors = 0);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> rwkv_cuda_unsupported(RwkvVersion version, const Cell& cell);

}  // namespace arch_bench
