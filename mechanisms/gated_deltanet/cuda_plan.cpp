#include "mechanisms/gated_deltanet/cuda_plan.hpp"

#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/gated_deltanet/cpu.hpp"

namespace arch_bench {

ColumnRecurrencePlan plan_gated_deltanet_cuda(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                              std::int64_t dv, int multiprocessors) {
  return plan_column_recurrence(batch_heads, tokens, dk, dv, multiprocessors, kGatedDeltaNetStagedGates);
}

std::optional<std::string> gated_deltanet_cuda_unsupported(const Cell& cell) {
  if (cell.head_dim < 1 || cell.head_dim > kGatedDeltaNetMaxDim) {
    return "the CUDA kernels of gated_deltanet take head_dim 1.." + std::to_string(kGatedDeltaNetMaxDim);
  }
  if (cell.batch_heads() < 1) return "the CUDA kernels of gated_deltanet need batch * heads >= 1";
  if (cell.sequence_length < 0) return "sequence_length must be >= 0";
  // The widest grid (one warp per block, whatever the SM count) and the largest stage.
  const ColumnRecurrencePlan widest =
      plan_gated_deltanet_cuda(cell.batch_heads(), 1, cell.head_dim, cell.head_dim, 1 << 30);
  if (widest.blocks > kCudaMaxGridX) return "batch * heads exceeds the CUDA grid limit (2^31 - 1 blocks)";
  const ColumnRecurrencePlan one_block = plan_gated_deltanet_cuda(cell.batch_heads(), 1, cell.head_dim, cell.head_dim, 0);
  if (one_block.shared_bytes > kCudaDefaultSharedBytes) return "the staged tokens exceed 48 KiB of shared memory";
  return std::nullopt;
}

}  // namespace arch_bench
