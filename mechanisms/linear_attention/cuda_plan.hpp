#pragma once
// Launch planning of the CUDA kernels of linear attention (cuda.cu): grids, blocks, shared memory
// and workspace as plain functions, compiled in every build and tested on the CPU
// (tests/test_linear_attention_cuda_plan.cpp). The kernels read their tile layout from the
// constants here, so the plan and the kernel cannot disagree about it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "mechanisms/common/chunk_scalar_decay_plan.hpp"
#include "mechanisms/common/chunk_tile.hpp"
#include "mechanisms/linear_attention/cpu.hpp"
#include "core/cell.hpp"

namespace arch_bench {

// Threads of every linear-attention kernel block; the kernels are compiled with this bound. The
// prefill's tiles are common/chunk_tile.hpp's (64-token chunks, 64 x 64 tiles of S, dk in steps of
// 32), which assume it.
inline constexpr int kLinearCudaThreads = kChunkTileThreads;
// The decode kernel spreads up to this many threads over (row group, value column).
inline constexpr int kLinearDecodeMaxThreads = 256;
// Widest head the kernels take (register tiles and shared memory are sized for it).
inline constexpr std::int64_t kLinearCudaMaxHeadDim = 256;
static_assert(kLinearAttentionChunk == kChunkTile, "the GPU chunk is the CPU chunk");

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
// The stages' grid (chunks, tiles, blocks) is the common ChunkwiseGrid (chunk_tile.hpp), whose
// decoders the kernels use; a block's index is one-dimensional.
struct LinearPrefillPlan : ChunkwiseGrid {
  std::int64_t batch_heads = 0;
  std::int64_t tokens = 0;
  int dk = 0;
  int dv = 0;
  std::int64_t chunk = kLinearAttentionChunk;
  std::int64_t key_steps = 0;    // ceil(dk / 32), the output kernel's dk loop
  int threads = kLinearCudaThreads;
  std::size_t state_shared_bytes = 0;
  std::size_t output_shared_bytes = 0;
  // Workspace, fp32: one [dk, dv] state and one [dk] key sum per (bh, chunk).
  std::int64_t workspace_state_elements = 0;
  std::int64_t workspace_sum_elements = 0;
  std::int64_t workspace_bytes() const;  // checked: throws SizeOverflow rather than wrapping
};

// Index maps shared by the kernels and the CPU tests (constexpr: callable from device code with
// --expt-relaxed-constexpr), so the tests check the mapping the kernels actually use; the prefill's
// are common/chunk_tile.hpp's.

// Decode: the value column and row group of thread t (rows group, group + row_groups, ...).
constexpr int linear_decode_column(const LinearDecodePlan& plan, int thread) { return thread % plan.columns; }
constexpr int linear_decode_group(const LinearDecodePlan& plan, int thread) { return thread / plan.columns; }

LinearDecodePlan plan_linear_attention_decode(std::int64_t batch_heads, std::int64_t dk, std::int64_t dv);
LinearPrefillPlan plan_linear_attention_prefill(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                                std::int64_t dv);

// The bf16 prefill on tensor cores (cuda_tensor_core.cu): linear attention is scalar-decay linear
// attention (common/chunk_scalar_decay_plan.hpp) with a_t = 1, keys phi(k_t), queries phi(q_t), and
// the normaliser carried as one more value column: V is extended by a column of ones (then zeros
// to the next multiple of 16), so the extended state holds [S | z | 0] and the extended output row
// [phi(q)^T S | phi(q)^T z | 0], numerator and denominator from the same bf16-rounded scores and
// state. A separate reduction for the denominator would reread phi(Q) and phi(K) (a quarter of the
// chunk kernels' input bytes at d = 64) and round differently from the numerator; the extra column
// costs 16 / d more products and state bytes (25% at d = 64), all inside kernels that are already
// reading the operands. It takes head_dim a multiple of 16 with head_dim + 16 <= 128 (16..112);
// fp32, decode and other head sizes run the SIMT kernels.
inline constexpr int kLinearTensorCoreNormaliserColumns = kScalarDecayFragment;
constexpr int linear_attention_extended_value_columns(std::int64_t dv) {
  return static_cast<int>(dv) + kLinearTensorCoreNormaliserColumns;
}
bool linear_attention_cuda_prefill_on_tensor_cores(const Cell& cell);
// The shared plan with dv + 16 value columns. Its workspace, plus the extended state
// [batch_heads][dk][dv + 16] fp32 that (S, z) are packed into before and unpacked from after.
// `choice` and `multiprocessors` pick the state pass (chunk_scalar_decay_plan.hpp).
ChunkScalarDecayPlan plan_linear_attention_tensor_core_prefill(
    std::int64_t batch_heads, std::int64_t tokens, std::int64_t head_dim,
    ScalarDecayStatePassChoice choice = ScalarDecayStatePassChoice::three_kernel, int multiprocessors = 0);
std::int64_t linear_attention_extended_state_elements(const ChunkScalarDecayPlan& plan);

// Device bytes a CUDA cell holds beyond inputs, outputs and (S, z): the prefill's chunk workspace
// (zero for decode, whose context is built with staging memory outside the cell's allocator).
std::int64_t linear_attention_cuda_workspace_bytes(const Cell& cell);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> linear_attention_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
