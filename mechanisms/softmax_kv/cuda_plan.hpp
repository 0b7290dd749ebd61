#pragma once
// Launch planning of the softmax_kv CUDA kernels (cuda.cu): split counts, grids, lanes, shared
// memory layouts and workspace sizes. Plain C++ with no CUDA headers, so every number a kernel is
// launched with is tested on the CPU (tests/test_softmax_kv_cuda_plan.cpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/cell.hpp"

namespace arch_bench {

// Decode (flash-decoding): one block per (split of the context, head); each block streams its rows
// of the K/V cache with 16-byte loads and reduces them to a partial (max, sum, acc[dim]); a combine
// kernel merges the partials of a head. With splits == 1 the block writes the output directly.
inline constexpr int kDecodeThreads = 128;
inline constexpr int kDecodeRowsInFlight = 4;         // rows each lane group loads per iteration
inline constexpr std::int64_t kDecodeMinRowsPerSplit = 64;
inline constexpr std::int64_t kDecodeMaxSplits = 512;  // bounds the workspace (see workspace bound)
inline constexpr int kDecodeBlocksPerMultiprocessor = 2;
inline constexpr int kVectorBytes = 16;  // one uint4 load

struct SoftmaxDecodeCudaPlan {
  std::int64_t batch_heads = 0;  // query heads of the batch (one grid row each)
  std::int64_t group = 1;        // query heads per K/V head: the cache holds batch_heads / group heads
  std::int64_t dim = 0;
  std::int64_t capacity = 0;  // cache rows per head
  std::int64_t context = 0;   // rows attended: position + 1
  int elem_bytes = 0;         // storage bytes per element (4: fp32, 2: bf16)

  std::int64_t splits = 1;  // blocks per head along the context

  int threads = kDecodeThreads;
  int vector_elems = 0;      // elements per 16-byte vector
  int vectors_per_row = 0;   // dim / vector_elems
  int lanes_per_row = 0;     // threads sharing one cache row (a power of two <= 32)
  int vectors_per_lane = 0;  // 1 or 2 (fp32 rows wider than 32 vectors)
  int row_groups = 0;        // threads / lanes_per_row: rows one block reads side by side
  int rows_per_iteration = 0;  // row_groups * kDecodeRowsInFlight
  std::size_t shared_bytes = 0;  // merge of the row groups: row_groups * (dim + 3) floats
  int combine_threads = 0;       // threads of the combine kernel (one per output element)

  // Split s covers rows [s * context / splits, (s + 1) * context / splits): sizes differ by at most
  // one row, so none is empty and none is shorter than context / splits. The kernel computes the
  // same bounds.
  std::int64_t split_begin(std::int64_t split) const { return split * context / splits; }
  std::int64_t split_end(std::int64_t split) const { return split_begin(split + 1); }
  // Partials (m, l, acc[dim]) of every (head, split): batch_heads * splits * (dim + 2).
  std::int64_t workspace_floats() const { return batch_heads * splits * (dim + 2); }
};

// Splits the context of `context` rows so that batch_heads * splits blocks give every one of the
// `multiprocessors` at least kDecodeBlocksPerMultiprocessor blocks, each split reading at least
// kDecodeMinRowsPerSplit rows (fewer splits for short contexts), at most kDecodeMaxSplits.
SoftmaxDecodeCudaPlan plan_softmax_decode_cuda(std::int64_t batch_heads, std::int64_t dim, DType dtype,
                                               std::int64_t capacity, std::int64_t context,
                                               int multiprocessors);

// Upper bound of the decode workspace in bytes over every GPU (splits <= kDecodeMaxSplits), for
// Mechanism::predicted_peak_bytes.
std::int64_t softmax_decode_cuda_workspace_bytes_bound(const Cell& cell);

// Prefill: causal tiled online softmax (FlashAttention-2 style); one block per (query tile, head).
enum class SoftmaxPrefillPath {
  tensor_core_bf16,  // bf16, head_dim % 16 == 0 and <= 128: wmma 16x16x16, fp32 accumulate
  simt,              // fp32 (tf32 would miss the 1e-4 tolerance) and other head_dims
};

inline constexpr int kPrefillThreads = 128;  // 4 warps
inline constexpr std::size_t kSharedAlignment = 128;
// What the H100/H200 let one block opt in to (cudaDevAttrMaxSharedMemoryPerBlockOptin).
inline constexpr std::size_t kMaxSharedBytesOptIn = 227 * 1024;
// Without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize) a block gets at most this.
inline constexpr std::size_t kDefaultSharedBytesLimit = 48 * 1024;

struct SoftmaxPrefillCudaPlan {
  SoftmaxPrefillPath path = SoftmaxPrefillPath::simt;
  std::int64_t batch_heads = 0;  // query heads of the batch
  std::int64_t group = 1;        // query heads per K/V head: query head bh reads K/V head bh / group
  std::int64_t tokens = 0;
  std::int64_t dim = 0;
  int threads = kPrefillThreads;
  int query_rows = 0;       // query rows per block (64 tensor-core, 32 SIMT)
  int keys_per_tile = 0;    // key rows per shared-memory tile (64 tensor-core, 32 SIMT)
  std::int64_t query_tiles = 0;  // grid.x = ceil(tokens / query_rows); grid.y = batch_heads

  // Shared memory layout: leading dimensions in elements, offsets in bytes from the (128-byte
  // aligned) dynamic shared memory base, every region 128-byte aligned. Tensor core: Q, K, V bf16
  // [rows][ld_qkv]; S float [64][ld_s]; P bf16 [64][ld_p]; O float [64][ld_o]. SIMT: Q float
  // [query_rows][ld_q], K float [keys][ld_k] (odd: conflict-free column walks), V float [keys][ld_v].
  int ld_q = 0, ld_k = 0, ld_v = 0, ld_s = 0, ld_p = 0, ld_o = 0;
  std::size_t q_offset = 0, k_offset = 0, v_offset = 0, s_offset = 0, p_offset = 0, o_offset = 0;
  std::size_t shared_bytes = 0;

  // Whether the kernel needs cudaFuncAttributeMaxDynamicSharedMemorySize set before launch.
  bool needs_shared_opt_in() const { return shared_bytes > kDefaultSharedBytesLimit; }
};

SoftmaxPrefillCudaPlan plan_softmax_prefill_cuda(std::int64_t batch_heads, std::int64_t tokens,
                                                 std::int64_t dim, DType dtype);

// Why the CUDA kernels cannot run `cell` (alignment of 16-byte loads, grid limits), or nullopt.
std::optional<std::string> softmax_kv_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
