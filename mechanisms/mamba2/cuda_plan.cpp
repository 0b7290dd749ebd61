#include "mechanisms/mamba2/cuda_plan.hpp"

#include <algorithm>
#include <limits>

#include "core/checked_size.hpp"
#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/common/tensor_core_prefill.hpp"
#include "mechanisms/mamba2/options.hpp"

namespace arch_bench {

Mamba2CudaPlan plan_mamba2_cuda(const Mamba2Shape& shape, std::int64_t tokens) {
  Mamba2CudaPlan plan;
  plan.rows = shape.rows();
  plan.heads = static_cast<int>(shape.heads);
  plan.groups = static_cast<int>(shape.groups);
  plan.head_dim = static_cast<int>(shape.head_dim);
  plan.state_size = static_cast<int>(shape.state_size);
  plan.tokens = tokens;
  plan.threads = static_cast<int>(ceil_div(std::max<std::int64_t>(shape.head_dim, 1), 32) * 32);
  plan.blocks = plan.rows;
  plan.shared_bytes = 2 * sizeof(float) * static_cast<std::size_t>(plan.state_size);
  return plan;
}

bool mamba2_cuda_prefill_is_chunked(const Cell& cell) {
  return prefill_runs_on_tensor_cores(
      cell, chunk_scalar_decay_supports(mamba2_state_size_option().integer(cell.options), cell.head_dim));
}

ChunkScalarDecayPlan mamba2_chunked_prefill_plan(const Cell& cell, int multiprocessors) {
  return plan_chunk_scalar_decay(checked_product(cell.batch, cell.heads), cell.sequence_length,
                                 mamba2_state_size_option().integer(cell.options), cell.head_dim,
                                 scalar_decay_state_pass_choice_of(cell), multiprocessors);
}

std::int64_t mamba2_cuda_workspace_bytes(const Cell& cell) {
  if (!mamba2_cuda_prefill_is_chunked(cell)) return 0;
  return chunk_scalar_decay_workspace_bytes(checked_product(cell.batch, cell.heads), cell.sequence_length,
                                            mamba2_state_size_option().integer(cell.options), cell.head_dim,
                                            scalar_decay_state_pass_choice_of(cell));
}

std::optional<std::string> mamba2_cuda_unsupported(const Cell& cell) {
  const std::int64_t n = mamba2_state_size_option().integer(cell.options);
  const std::int64_t groups = mamba2_groups_option().integer(cell.options);
  if (n < 1 || n > kMamba2MaxStateSize) {
    return "the CUDA kernel of mamba2 takes state_size (N) 1.." + std::to_string(kMamba2MaxStateSize);
  }
  if (cell.head_dim < 1 || cell.head_dim > kMamba2CudaMaxThreads) {
    return "the CUDA kernel of mamba2 takes head_dim 1.." + std::to_string(kMamba2CudaMaxThreads);
  }
  if (cell.heads < 1 || cell.heads > std::numeric_limits<std::int32_t>::max() || groups < 1 ||
      cell.heads % groups != 0) {
    return "the CUDA kernel of mamba2 needs 1 <= n_groups dividing heads < 2^31";
  }
  if (cell.sequence_length < 0) return "sequence_length must be >= 0";
  const Mamba2Shape shape{cell.batch, cell.heads, groups, cell.head_dim, n};
  if (shape.rows() < 1) return "the CUDA kernel of mamba2 needs batch * heads >= 1";
  if (plan_mamba2_cuda(shape, 1).blocks > kCudaMaxGridX) {
    return "batch * heads exceeds the CUDA grid limit (2^31 - 1 blocks)";
  }
  if (mamba2_cuda_prefill_is_chunked(cell)) return chunk_scalar_decay_unlaunchable(mamba2_chunked_prefill_plan(cell));
  return std::nullopt;
}

}  // namespace arch_bench
