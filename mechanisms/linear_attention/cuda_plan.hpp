#pragma once
// Launch planning of the CUDA kernels of linear attention (cuda.cu): grids, blocks, shared memory
// and workspace as plain functions, compiled in every build and tested on the CPU
// (tests/test_linear_attention_cuda_plan.cpp). The kernels read their tile layout from the
// constants here, so the plan and the kernel cannot disagree about it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "mechanisms/linear_attention/cpu.hpp"
#include "core/cell.hpp"

namespace arch_bench {

// Threads of every linear-attention kernel block; the kernels are compiled with this bound.
inline constexpr int kLinearCudaThreads = 256;
// The decode kernel spreads up to this many threads over (row group, value column).
inline constexpr int kLinearDecodeMaxThreads = 256;
// Widest head the kernels take (register tiles and shared memory are sized for it).
inline constexpr std::int64_t kLinearCudaMaxHeadDim = 256;

// Prefill tiles. A chunk is 64 tokens (kLinearAttentionChunk); state tiles are 64 x 64 elements of
// S; the output kernel walks dk in steps of 32. 256 threads hold a 64 x 64 tile as 16 x 16 threads
// with 4 x 4 elements each, at rows ty + 16a and columns tx + 16b, so that a warp's 16 consecutive
// tx touch 16 consecutive columns (coalesced in global memory, conflict-free in shared memory).
inline constexpr int kLinearTile = 64;
inline constexpr int kLinearKeyStep = 32;
inline constexpr int kLinearPad = 1;  // one float of padding per shared row breaks bank conflicts

// Shared-memory layout of the output kernel (floats). The dk loop and the masked A V product run
// one after the other, so their regions overlap; the per-row denominators sit after both.
struct LinearOutputSharedLayout {
  // dk loop: phi(Q) [64][33], phi(K) [64][33], S_in rows [32][64], z_in [32]
  static constexpr int q = 0;
  static constexpr int k = q + kLinearTile * (kLinearKeyStep + kLinearPad);
  static constexpr int s = k + kLinearTile * (kLinearKeyStep + kLinearPad);
  static constexpr int z = s + kLinearKeyStep * kLinearTile;
  static constexpr int loop_end = z + kLinearKeyStep;
  // A V product: masked A [64][65], V [64][64]
  static constexpr int a = 0;
  static constexpr int v = a + kLinearTile * (kLinearTile + kLinearPad);
  static constexpr int product_end = v + kLinearTile * kLinearTile;
  static constexpr int denominator = loop_end > product_end ? loop_end : product_end;
  static constexpr int floats = denominator + kLinearTile;
};

// Shared-memory layout of the chunk-state kernel (floats): phi(K_c) [64][64] and V_c [64][64].
struct LinearChunkStateSharedLayout {
  static constexpr int k = 0;
  static constexpr int v = k + kLinearTile * kLinearTile;
  static constexpr int floats = v + kLinearTile * kLinearTile;
};

// Decode: one block per (batch, head) owns that head's S and z, so the in-place update of z and
// the denominator need no cross-block synchronisation. Thread t < columns * row_groups handles
// value column t % columns and rows g, g + row_groups, ... of S with g = t / columns: a warp reads
// and writes consecutive columns of one row (coalesced). Threads are rounded up to whole warps
// (the denominator is a warp reduction); threads past columns * row_groups only help load.
struct LinearDecodePlan {
  std::int64_t blocks = 0;
  int threads = 0;
  int columns = 0;     // dv
  int row_groups = 0;
  int dk = 0;
  int dv = 0;
  // phi(q), phi(k), phi(q) * z [dk each], v [dv], partial numerators [row_groups][dv], denominator
  std::size_t shared_bytes = 0;
};

// Prefill, chunkwise and parallel over chunks (as flash-linear-attention does):
//  1. chunk_state: per (bh, chunk, 64x64 tile of S), U_c = phi(K_c)^T V_c and the key sums of the
//     chunk, into the workspace;
//  2. chunk_prefix: per (bh, element of S or z), an exclusive prefix over chunks in place: the
//     workspace then holds the state entering each chunk (the carried-in state included) and the
//     final (S, z) goes back to the state buffers;
//  3. chunk_output: per (bh, chunk, 64-column tile of the output), o = (phi(Q_c) S_in +
//     mask(phi(Q_c) phi(K_c)^T) V_c) / (phi(Q_c) z_in + rowsum(mask(...))).
struct LinearPrefillPlan {
  std::int64_t batch_heads = 0;
  std::int64_t tokens = 0;
  int dk = 0;
  int dv = 0;
  std::int64_t chunk = kLinearAttentionChunk;
  std::int64_t chunks = 0;       // ceil(tokens / chunk)
  std::int64_t key_tiles = 0;    // ceil(dk / 64)
  std::int64_t value_tiles = 0;  // ceil(dv / 64)
  std::int64_t key_steps = 0;    // ceil(dk / 32), the output kernel's dk loop
  int threads = kLinearCudaThreads;
  // Blocks of each stage (one-dimensional grids; the kernels decode the index).
  std::int64_t state_blocks = 0;   // batch_heads * chunks * key_tiles * value_tiles
  std::int64_t prefix_elements = 0;  // per head: dk * dv + dk
  std::int64_t prefix_blocks = 0;  // batch_heads * ceil(prefix_elements / threads)
  std::int64_t output_blocks = 0;  // batch_heads * chunks * value_tiles
  std::size_t state_shared_bytes = 0;
  std::size_t output_shared_bytes = 0;
  // Workspace, fp32: one [dk, dv] state and one [dk] key sum per (bh, chunk).
  std::int64_t workspace_state_elements = 0;
  std::int64_t workspace_sum_elements = 0;
  std::int64_t workspace_bytes() const;  // checked: throws SizeOverflow rather than wrapping
};

// Index maps shared by the kernels and the CPU tests (constexpr: callable from device code with
// --expt-relaxed-constexpr), so the tests check the mapping the kernels actually use.

// Decode: the value column and row group of thread t (rows group, group + row_groups, ...).
constexpr int linear_decode_column(const LinearDecodePlan& plan, int thread) { return thread % plan.columns; }
constexpr int linear_decode_group(const LinearDecodePlan& plan, int thread) { return thread / plan.columns; }

// Prefill tiles: which (head, chunk, 64 x 64 tile) a block of stage 1 or 3 computes (value tile
// fastest), and which elements of the tile a thread holds (rows ty + 16a, columns tx + 16b).
struct LinearChunkTile {
  std::int64_t bh = 0;
  std::int64_t chunk = 0;
  std::int64_t key_tile = 0;  // always 0 in stage 3, which loops over dk
  std::int64_t value_tile = 0;
};
constexpr LinearChunkTile linear_state_block(std::int64_t block, std::int64_t chunks, std::int64_t key_tiles,
                                             std::int64_t value_tiles) {
  LinearChunkTile tile;
  tile.value_tile = block % value_tiles;
  block /= value_tiles;
  tile.key_tile = block % key_tiles;
  block /= key_tiles;
  tile.chunk = block % chunks;
  tile.bh = block / chunks;
  return tile;
}
constexpr LinearChunkTile linear_output_block(std::int64_t block, std::int64_t chunks, std::int64_t value_tiles) {
  return linear_state_block(block, chunks, 1, value_tiles);
}
constexpr int linear_tile_row(int thread, int a) { return thread / 16 + 16 * a; }
constexpr int linear_tile_column(int thread, int b) { return thread % 16 + 16 * b; }
// Tokens of chunk `chunk` (64, or fewer in the last chunk).
constexpr int linear_chunk_rows(std::int64_t tokens, std::int64_t chunk) {
  return tokens - chunk * kLinearTile < kLinearTile ? static_cast<int>(tokens - chunk * kLinearTile) : kLinearTile;
}

// Stage 2: head and element of (S, z) (elements [0, dk*dv) are S, then z) of a thread.
struct LinearPrefixElement {
  std::int64_t bh = 0;
  std::int64_t element = 0;
};
constexpr LinearPrefixElement linear_prefix_element(std::int64_t block, int thread, std::int64_t blocks_per_head,
                                                    int threads) {
  return {block / blocks_per_head, (block % blocks_per_head) * threads + thread};
}

LinearDecodePlan plan_linear_attention_decode(std::int64_t batch_heads, std::int64_t dk, std::int64_t dv);
LinearPrefillPlan plan_linear_attention_prefill(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                                std::int64_t dv);

// Device bytes a CUDA cell holds beyond inputs, outputs and (S, z): the prefill's chunk workspace
// (zero for decode, whose context is built with staging memory outside the cell's allocator).
std::int64_t linear_attention_cuda_workspace_bytes(const Cell& cell);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> linear_attention_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
