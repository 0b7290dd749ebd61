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

// Decode (flash-decoding with grouped-query attention): one block per (split of the context, K/V
// head, slice of its query group). The block holds the slice's query vectors in registers while its
// rows of that K/V head stream once with 16-byte loads, so a K/V head is read once for its whole
// group (not once per query head), and reduces them to one partial (max, sum, acc[dim]) per query;
// a combine kernel merges the partials of a query head. With splits == 1 the block writes the
// outputs directly.
inline constexpr int kDecodeThreads = 128;
inline constexpr int kDecodeRowsInFlight = 4;         // rows each lane group loads per iteration
// ... with 8 queries per block: their scores and weights (8 x rows floats each) and the raw rows
// share 255 registers per thread, so fewer rows are loaded at once (more blocks keep loads in flight).
inline constexpr int decode_rows_in_flight(int queries_per_block) {
  return queries_per_block >= 8 ? 2 : kDecodeRowsInFlight;
}
inline constexpr std::int64_t kDecodeMinRowsPerSplit = 64;
inline constexpr std::int64_t kDecodeMaxSplits = 512;  // bounds the workspace (see workspace bound)
// Blocks the split aims to give every multiprocessor. Two (128 threads each, 4 rows of K and V in
// flight per thread: 32 KiB per SM) left B1 L32768 at 45-48% of copy bandwidth on the H200, where
// B16 (many more blocks) reached 89%: the loads in flight per SM, not the combine, were short.
inline constexpr int kDecodeBlocksPerMultiprocessor = 4;
// Query vectors one block holds at most (registers: queries x head_dim / lanes_per_row floats of q
// and as many of acc per thread); larger groups take several slices, each reading the K/V head.
inline constexpr int kDecodeMaxQueriesPerBlock = 8;
// The kernel's __launch_bounds__ minimum of resident blocks: kDecodeBlocksPerMultiprocessor (at
// most 128 registers per thread) while a lane holds at most 4 query vectors (queries x vectors per
// lane), 2 (255 registers) above. Measured with ptxas -v (sm_90, no spills): bf16 with 1/2/4/8
// queries 96/112/128/218 registers; fp32 one vector per lane 80/94/115/143, two 112/128/197/234.
// (Left to itself ptxas gave the fp32 two-query instance 72 registers and an 8-byte spill; capped
// at 128, the fp32 two-vector four-query one spilled 284 bytes.)
inline constexpr int decode_min_blocks_per_multiprocessor(int queries_per_block, int vectors_per_lane) {
  return queries_per_block * vectors_per_lane <= 4 ? kDecodeBlocksPerMultiprocessor : 2;
}
inline constexpr int kVectorBytes = 16;  // one uint4 load

struct SoftmaxDecodeCudaPlan {
  std::int64_t batch_heads = 0;  // query heads of the batch
  std::int64_t group = 1;        // query heads per K/V head: the cache holds batch_heads / group heads
  std::int64_t dim = 0;
  std::int64_t capacity = 0;  // cache rows per K/V head
  std::int64_t context = 0;   // rows attended: [0, context); the new token's row is one of them
  int elem_bytes = 0;         // storage bytes per element (4: fp32, 2: bf16)

  int queries_per_block = 1;      // 1, 2, 4 or 8 (a kernel instance each): >= group up to 8
  std::int64_t query_slices = 1;  // blocks per K/V head and split: ceil(group / queries_per_block)
  std::int64_t splits = 1;        // blocks per K/V head and slice along the context

  int threads = kDecodeThreads;
  int vector_elems = 0;      // elements per 16-byte vector
  int vectors_per_row = 0;   // dim / vector_elems
  int lanes_per_row = 0;     // threads sharing one cache row (a power of two <= 32)
  int vectors_per_lane = 0;  // 1 or 2 (fp32 rows wider than 32 vectors)
  int row_groups = 0;        // threads / lanes_per_row: rows one block reads side by side
  int rows_per_iteration = 0;  // row_groups * decode_rows_in_flight(queries_per_block)
  // Merge of the row groups, one query at a time: row_groups * (dim + 3) floats.
  std::size_t shared_bytes = 0;
  int combine_threads = 0;       // threads of the combine kernel (one per output element)

  std::int64_t batch_kv_heads() const { return batch_heads / group; }
  // grid.y of the decode kernel: row y is K/V head y / query_slices, slice y % query_slices.
  std::int64_t head_blocks() const { return batch_kv_heads() * query_slices; }
  std::int64_t blocks() const { return head_blocks() * splits; }

  // Split s covers rows [s * context / splits, (s + 1) * context / splits): sizes differ by at most
  // one row, so none is empty and none is shorter than context / splits. The kernel computes the
  // same bounds.
  std::int64_t split_begin(std::int64_t split) const { return split * context / splits; }
  std::int64_t split_end(std::int64_t split) const { return split_begin(split + 1); }
  // Partials (m, l, acc[dim]) of every (query head, split): batch_heads * splits * (dim + 2).
  std::int64_t workspace_floats() const { return batch_heads * splits * (dim + 2); }
  // Bytes of K/V cache the decode kernel reads: each K/V head's context rows once per query slice.
  std::int64_t kv_bytes_read() const { return 2 * head_blocks() * context * dim * elem_bytes; }
};

// Plans decode for batch_heads query heads in groups of `group` per K/V head (1: multi-head). The
// split gives every one of the `multiprocessors` at least kDecodeBlocksPerMultiprocessor blocks,
// each split reading at least kDecodeMinRowsPerSplit rows (fewer splits for short contexts), at
// most kDecodeMaxSplits; a grid that already fills the machine is not split.
SoftmaxDecodeCudaPlan plan_softmax_decode_cuda(std::int64_t batch_heads, std::int64_t group, std::int64_t dim,
                                               DType dtype, std::int64_t capacity, std::int64_t context,
                                               int multiprocessors);

// Upper bound of the decode workspace in bytes over every GPU (splits <= kDecodeMaxSplits), for
// Mechanism::predicted_peak_bytes.
std::int64_t softmax_decode_cuda_workspace_bytes_bound(const Cell& cell);

// Prefill: causal tiled online softmax (FlashAttention-2 style); one block per (query tile, head).
enum class SoftmaxPrefillPath {
  // bf16, head_dim 64 or 128 (cuda_prefill_mma.cu): mma.sync m16n8k16 with S, P and O in registers,
  // K/V tiles double-buffered with cp.async.
  mma_bf16,
  tensor_core_bf16,  // other bf16 head_dim % 16 == 0 up to 128: wmma 16x16x16 through shared memory
  simt,              // fp32 (tf32 would miss the 1e-4 tolerance) and other head_dims
};

// Head sizes the register-resident mma prefill has a kernel instance for.
inline constexpr bool prefill_mma_takes(std::int64_t dim) { return dim == 64 || dim == 128; }

// The prefill kernel plan_softmax_prefill_cuda chooses for a dtype and head size.
SoftmaxPrefillPath softmax_prefill_path(DType dtype, std::int64_t dim);
// Its name in `gpu_kernel`: "mma_bf16", "wmma_bf16" or "simt".
const char* softmax_prefill_path_name(SoftmaxPrefillPath path);
// What the hand kernels' rows record as `gpu_kernel`: "hand: prefill <path>" for a prefill cell,
// "hand: decode simt" for a decode step (its context fill is not timed), and conformance, which
// runs both, "hand: prefill <path>, decode simt". The decode kernel is one SIMT kernel (16-byte
// loads, split along the context) for every dtype.
std::string softmax_hand_kernel_name(Phase phase, DType dtype, std::int64_t dim);
std::string softmax_hand_conformance_kernels(DType dtype, std::int64_t dim);
// The mma prefill's __launch_bounds__ minimum of resident blocks per SM, which caps its registers
// at 65536 / (128 x blocks): head_dim 64 holds 3 blocks (<= 168 registers; its 45 KiB of shared
// memory would allow 4), head_dim 128 2 (<= 255; 85 KiB of shared memory allows 2 as well).
inline constexpr int prefill_mma_min_blocks(std::int64_t dim) { return dim <= 64 ? 3 : 2; }
// K/V tiles in flight in the mma prefill: the next tile's cp.async copies overlap this tile's math.
inline constexpr int kPrefillMmaKvStages = 2;

// The first key tile (of `keys` rows) the query tile at q0 loads: the one holding its first query's
// oldest key in the band (t - band, t]; tiles wholly before it are outside every query's band.
inline constexpr std::int64_t prefill_first_key_tile(std::int64_t q0, std::int64_t band, std::int64_t keys) {
  const std::int64_t first_key = q0 - band + 1;
  return first_key <= 0 ? 0 : first_key / keys;
}

// Whether key tile at k0 (`keys` rows) needs the per-element mask for the query tile at q0 (`rows`
// rows) when query t attends keys (t - band, t] of `tokens`: the diagonal tile (some key after some
// query; keys past the last token only occur there) and a tile crossing the band's lower edge.
// Every other tile a block loads is visible to all its queries and skips the mask. constexpr so the
// kernels (--expt-relaxed-constexpr) and the CPU tests call this one definition.
inline constexpr bool prefill_key_tile_masked(std::int64_t q0, std::int64_t rows, std::int64_t k0,
                                              std::int64_t keys, std::int64_t band, std::int64_t tokens) {
  const bool crosses_diagonal = k0 + keys - 1 > q0;
  const bool crosses_band = band < tokens && k0 <= q0 + rows - 1 - band;
  return crosses_diagonal || crosses_band;
}

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
  // Sliding window: query t attends keys (t - window, t]; 0 attends every earlier key (causal).
  std::int64_t window = 0;
  std::int64_t dim = 0;
  int threads = kPrefillThreads;
  int query_rows = 0;       // query rows per block (64 tensor-core, 32 SIMT)
  int keys_per_tile = 0;    // key rows per shared-memory tile (64 tensor-core, 32 SIMT)
  std::int64_t query_tiles = 0;  // grid.x = ceil(tokens / query_rows); grid.y = batch_heads

  // Shared memory layout: leading dimensions in elements, offsets in bytes from the (128-byte
  // aligned) dynamic shared memory base, every region 128-byte aligned. mma: Q bf16 [64][ld_q], then
  // kv_stages K tiles and kv_stages V tiles bf16 [64][ld_k] (stage s of K at k_offset + s *
  // kv_stage_bytes, of V at v_offset + s * kv_stage_bytes). Tensor core (wmma): Q, K, V bf16
  // [rows][ld_qkv]; S float [64][ld_s]; P bf16 [64][ld_p]; O float [64][ld_o]. SIMT: Q float
  // [query_rows][ld_q], K float [keys][ld_k] (odd: conflict-free column walks), V float [keys][ld_v].
  int ld_q = 0, ld_k = 0, ld_v = 0, ld_s = 0, ld_p = 0, ld_o = 0;
  std::size_t q_offset = 0, k_offset = 0, v_offset = 0, s_offset = 0, p_offset = 0, o_offset = 0;
  int kv_stages = 1;
  std::size_t kv_stage_bytes = 0;
  std::size_t shared_bytes = 0;

  // Keys query t attends: (t - band, t]. The whole causal prefix without a window.
  std::int64_t band() const { return window > 0 && window < tokens ? window : tokens; }
  // Key tiles a block of query tile `tile` loads: [first_key_tile, tile]. Tiles wholly before the
  // band of the tile's first query are skipped (the kernels compute the same bound).
  std::int64_t first_key_tile(std::int64_t tile) const {
    return prefill_first_key_tile(tile * query_rows, band(), keys_per_tile);
  }

  // Key tiles query tile `tile` loads are [first_key_tile(tile), tile]; which of them are masked.
  bool key_tile_masked(std::int64_t tile, std::int64_t key_tile) const {
    return prefill_key_tile_masked(tile * query_rows, query_rows, key_tile * keys_per_tile, keys_per_tile, band(),
                                   tokens);
  }

  // Whether the kernel needs cudaFuncAttributeMaxDynamicSharedMemorySize set before launch.
  bool needs_shared_opt_in() const { return shared_bytes > kDefaultSharedBytesLimit; }
};

SoftmaxPrefillCudaPlan plan_softmax_prefill_cuda(std::int64_t batch_heads, std::int64_t tokens,
                                                 std::int64_t dim, DType dtype);
// The same plan for query heads in groups of `group` per K/V head and a sliding `window` (0: none).
SoftmaxPrefillCudaPlan plan_softmax_prefill_cuda(std::int64_t batch_heads, std::int64_t group, std::int64_t tokens,
                                                 std::int64_t dim, DType dtype, std::int64_t window);

// Why the CUDA kernels cannot run `cell` (alignment of 16-byte loads, grid limits), or nullopt.
std::optional<std::string> softmax_kv_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
