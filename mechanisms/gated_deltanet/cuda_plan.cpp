#include "mechanisms/gated_deltanet/cuda_plan.hpp"

#include "mechanisms/common/column_recurrence_limits.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/common/tensor_core_prefill.hpp"
#include "mechanisms/gated_deltanet/cpu.hpp"

namespace arch_bench {

ColumnRecurrencePlan plan_gated_deltanet_cuda(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                              std::int64_t dv, int multiprocessors) {
  return plan_column_recurrence(batch_heads, tokens, dk, dv, multiprocessors, kGatedDeltaNetStagedGates);
}

bool gated_deltanet_cuda_prefill_is_chunked(const Cell& cell) {
  return prefill_runs_on_tensor_cores(cell, chunk_delta_rule_supports(cell.head_dim, cell.head_dim));
}

ChunkDeltaRulePlan gated_deltanet_chunked_prefill_plan(const Cell& cell, int multiprocessors) {
  return plan_chunk_delta_rule(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.head_dim,
                               multiprocessors);
}

std::int64_t gated_deltanet_cuda_workspace_bytes(const Cell& cell) {
  if (!gated_deltanet_cuda_prefill_is_chunked(cell)) return 0;
  return chunk_delta_rule_workspace_bytes(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.head_dim);
}

std::optional<std::string> gated_deltanet_cuda_unsupported(const Cell& cell) {
  if (auto problem = column_recurrence_unsupported(cell, "gated_deltanet", kGatedDeltaNetMaxDim,
                                                   kGatedDeltaNetStagedGates)) {
    return problem;
  }
  if (gated_deltanet_cuda_prefill_is_chunked(cell)) {
    // One block per value column of a head: the most pass blocks any device's plan has.
    const ChunkDeltaRulePlan chunked = gated_deltanet_chunked_prefill_plan(cell, 1 << 30);
    if (chunked.prepare_blocks > kCudaMaxGridX || chunked.pass_blocks > kCudaMaxGridX) {
      return "batch * heads * ceil(sequence_length / 64) exceeds the CUDA grid limit (2^31 - 1 blocks)";
    }
    // The widest value tile has the largest pass layout.
    if (gated_deltanet_chunked_prefill_plan(cell, 0).max_shared_bytes() > kDeltaRuleMaxSharedBytes) {
      return "the chunkwise prefill exceeds 227 KiB of shared memory";
    }
  }
  return std::nullopt;
}

}  // namespace arch_bench
