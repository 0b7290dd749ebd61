#include "mechanisms/retnet/cuda_plan.hpp"

#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/common/column_recurrence_limits.hpp"
#include "mechanisms/common/tensor_core_prefill.hpp"
#include "mechanisms/retnet/cpu.hpp"

namespace arch_bench {

ColumnRecurrencePlan plan_retnet_cuda(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                      std::int64_t dv, int multiprocessors) {
  return plan_column_recurrence(batch_heads, tokens, dk, dv, multiprocessors, 0);
}

bool retnet_cuda_prefill_is_chunked(const Cell& cell) {
  return prefill_runs_on_tensor_cores(cell, chunk_scalar_decay_supports(cell.head_dim, cell.head_dim));
}

ChunkScalarDecayPlan retnet_chunked_prefill_plan(const Cell& cell, int multiprocessors) {
  return plan_chunk_scalar_decay(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.head_dim,
                                 scalar_decay_state_pass_choice_of(cell), multiprocessors);
}

std::int64_t retnet_cuda_workspace_bytes(const Cell& cell) {
  if (!retnet_cuda_prefill_is_chunked(cell)) return 0;
  return chunk_scalar_decay_workspace_bytes(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.head_dim,
                                            scalar_decay_state_pass_choice_of(cell));
}

std::optional<std::string> retnet_cuda_unsupported(const Cell& cell) {
  if (auto problem = column_recurrence_unsupported(cell, "retnet", kRetNetMaxDim, 0)) return problem;
  if (retnet_cuda_prefill_is_chunked(cell)) return chunk_scalar_decay_unlaunchable(retnet_chunked_prefill_plan(cell));
  return std::nullopt;
}

}  // namespace arch_bench
