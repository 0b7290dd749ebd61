#include "mechanisms/common/column_recurrence_limits.hpp"

#include "mechanisms/common/column_recurrence_plan.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"

namespace arch_bench {

std::optional<std::string> column_recurrence_unsupported(const Cell& cell, const std::string& id,
                                                         std::int64_t max_head_dim, int extra_per_token) {
  if (cell.head_dim < 1 || cell.head_dim > max_head_dim) {
    return "the CUDA kernels of " + id + " take head_dim 1.." + std::to_string(max_head_dim);
  }
  if (cell.batch_heads() < 1) return "the CUDA kernels of " + id + " need batch * heads >= 1";
  if (cell.sequence_length < 0) return "sequence_length must be >= 0";
  // The widest grid (one warp per block, whatever the SM count) and the largest stage.
  const ColumnRecurrencePlan widest =
      plan_column_recurrence(cell.batch_heads(), 1, cell.head_dim, cell.head_dim, 1 << 30, extra_per_token);
  if (widest.blocks > kCudaMaxGridX) return "batch * heads exceeds the CUDA grid limit (2^31 - 1 blocks)";
  const ColumnRecurrencePlan one_block =
      plan_column_recurrence(cell.batch_heads(), 1, cell.head_dim, cell.head_dim, 0, extra_per_token);
  if (one_block.shared_bytes > kCudaDefaultSharedBytes) return "the staged tokens exceed 48 KiB of shared memory";
  return std::nullopt;
}

}  // namespace arch_bench
