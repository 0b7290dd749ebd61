#include "mechanisms/linear_attention/cuda_plan.hpp"

#include <algorithm>

#include "core/checked_size.hpp"
#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/common/tensor_core_prefill.hpp"

namespace arch_bench {

LinearDecodePlan plan_linear_attention_decode(std::int64_t batch_heads, std::int64_t dk, std::int64_t dv) {
  LinearDecodePlan plan;
  plan.blocks = batch_heads;
  plan.dk = static_cast<int>(dk);
  plan.dv = static_cast<int>(dv);
  plan.columns = static_cast<int>(dv);
  // As many row groups as fit in the block, but never more than there are rows.
  plan.row_groups = static_cast<int>(std::clamp<std::int64_t>(kLinearDecodeMaxThreads / std::max<std::int64_t>(dv, 1), 1,
                                                              std::max<std::int64_t>(dk, 1)));
  plan.threads = static_cast<int>(ceil_div(static_cast<std::int64_t>(plan.columns) * plan.row_groups, 32) * 32);
  plan.shared_bytes = sizeof(float) * static_cast<std::size_t>(3 * dk + dv + plan.row_groups * dv + 1);
  return plan;
}

LinearPrefillPlan plan_linear_attention_prefill(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                                std::int64_t dv) {
  LinearPrefillPlan plan;
  plan.batch_heads = batch_heads;
  plan.tokens = tokens;
  plan.dk = static_cast<int>(dk);
  plan.dv = static_cast<int>(dv);
  static_cast<ChunkwiseGrid&>(plan) = plan_chunkwise_grid(batch_heads, tokens, dk, dv);
  plan.key_steps = ceil_div(dk, kChunkTileStep);
  plan.state_shared_bytes = sizeof(float) * ChunkStateSharedLayout::floats;
  plan.output_shared_bytes = sizeof(float) * ChunkOutputSharedLayout::floats;
  // Sizes follow user-given lengths: every product is checked (SizeOverflow rather than a wrap).
  plan.workspace_state_elements = checked_product(batch_heads, plan.chunks, dk, dv);
  plan.workspace_sum_elements = checked_product(batch_heads, plan.chunks, dk);
  return plan;
}

std::int64_t LinearPrefillPlan::workspace_bytes() const {
  return checked_mul(checked_add(workspace_state_elements, workspace_sum_elements), 4);
}

bool linear_attention_cuda_prefill_on_tensor_cores(const Cell& cell) {
  return prefill_runs_on_tensor_cores(
      cell, chunk_scalar_decay_supports(cell.head_dim, cell.head_dim + kLinearTensorCoreNormaliserColumns));
}

ChunkScalarDecayPlan plan_linear_attention_tensor_core_prefill(std::int64_t batch_heads, std::int64_t tokens,
                                                               std::int64_t head_dim, ScalarDecayStatePassChoice choice,
                                                               int multiprocessors) {
  return plan_chunk_scalar_decay(batch_heads, tokens, head_dim, linear_attention_extended_value_columns(head_dim),
                                 choice, multiprocessors);
}

std::int64_t linear_attention_extended_state_elements(const ChunkScalarDecayPlan& plan) {
  return checked_product(plan.batch_heads, plan.dk, plan.dv);
}

std::int64_t linear_attention_cuda_workspace_bytes(const Cell& cell) {
  if (cell.phase == Phase::decode) return 0;
  if (linear_attention_cuda_prefill_on_tensor_cores(cell)) {
    const ChunkScalarDecayPlan plan =
        plan_linear_attention_tensor_core_prefill(cell.batch_heads(), cell.sequence_length, cell.head_dim,
                                                  scalar_decay_state_pass_choice_of(cell));
    return checked_add(plan.workspace_bytes(), checked_mul(linear_attention_extended_state_elements(plan), 4));
  }
  return plan_linear_attention_prefill(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.head_dim)
      .workspace_bytes();
}

std::optional<std::string> linear_attention_cuda_unsupported(const Cell& cell) {
  if (cell.head_dim < 1 || cell.head_dim > kLinearCudaMaxHeadDim) {
    return "the CUDA kernels of linear_attention take head_dim 1.." + std::to_string(kLinearCudaMaxHeadDim);
  }
  if (cell.batch_heads() < 1) return "the CUDA kernels of linear_attention need batch * heads >= 1";
  if (cell.sequence_length < 0) return "sequence_length must be >= 0";
  const std::int64_t d = cell.head_dim;
  if (cell.phase == Phase::decode) {
    const LinearDecodePlan plan = plan_linear_attention_decode(cell.batch_heads(), d, d);
    if (plan.blocks > kCudaMaxGridX) return "batch * heads exceeds the CUDA grid limit (2^31 - 1 blocks)";
    if (plan.shared_bytes > kCudaDefaultSharedBytes) return "decode shared memory exceeds 48 KiB";
    return std::nullopt;
  }
  const LinearPrefillPlan plan = plan_linear_attention_prefill(cell.batch_heads(), cell.sequence_length, d, d);
  if (std::max({plan.state_blocks, plan.prefix_blocks, plan.output_blocks}) > kCudaMaxGridX) {
    return "batch * heads * chunks exceeds the CUDA grid limit (2^31 - 1 blocks); use a shorter sequence "
           "or fewer heads";
  }
  return std::nullopt;
}

}  // namespace arch_bench
