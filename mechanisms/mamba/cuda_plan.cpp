#include "mechanisms/mamba/cuda_plan.hpp"
#include "mechanisms/mamba/options.hpp"

#include <algorithm>
#include <limits>

#include "core/checked_size.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"

namespace arch_bench {

MambaDecodePlan plan_mamba_decode(const MambaShape& shape) {
  MambaDecodePlan plan;
  plan.rows = shape.rows();
  plan.channels = static_cast<int>(shape.channels);
  plan.state_size = static_cast<int>(shape.state_size);
  // The smallest power of two >= N, at most a warp: N = 16 gives 16 lanes (two rows per warp).
  int lanes = 1;
  while (lanes < 32 && lanes < shape.state_size) lanes *= 2;
  plan.lanes = lanes;
  plan.blocks = ceil_div(checked_mul(plan.rows, lanes), plan.threads);
  return plan;
}

std::int64_t mamba_prefill_segments(std::int64_t row_blocks, std::int64_t chunks, int multiprocessors) {
  if (multiprocessors <= 0 || row_blocks < 1 || chunks < 2) return 1;
  const std::int64_t resident =
      static_cast<std::int64_t>(kMambaScanMinBlocksPerSm) * std::min(multiprocessors, kMambaSplitMaxMultiprocessors);
  const std::int64_t segments = std::min(chunks, resident / row_blocks);
  if (segments < 2) return 1;
  const std::int64_t per_segment = ceil_div(chunks, segments);
  return 2 * per_segment < chunks ? ceil_div(chunks, per_segment) : 1;
}

MambaPrefillPlan plan_mamba_prefill(const MambaShape& shape, std::int64_t tokens, int multiprocessors) {
  MambaPrefillPlan plan;
  plan.batch = shape.batch;
  plan.channels = static_cast<int>(shape.channels);
  plan.state_size = static_cast<int>(shape.state_size);
  plan.tokens = tokens;
  plan.channel_groups = ceil_div(shape.channels, kMambaScanWarps);
  plan.chunks = ceil_div(tokens, kMambaScanChunk);
  plan.shared_bytes = mamba_scan_shared_bytes(static_cast<int>(sizeof(float)), plan.state_size);
  const std::int64_t row_blocks = checked_mul(shape.batch, plan.channel_groups);
  return split_mamba_prefill(plan, mamba_prefill_segments(row_blocks, plan.chunks, multiprocessors));
}

MambaPrefillPlan split_mamba_prefill(MambaPrefillPlan plan, std::int64_t segments) {
  segments = std::clamp<std::int64_t>(segments, 1, std::max<std::int64_t>(1, plan.chunks));
  const std::int64_t per_segment = segments == 1 ? plan.chunks : ceil_div(plan.chunks, segments);
  plan.segments = per_segment == 0 ? 1 : ceil_div(plan.chunks, per_segment);
  plan.segment_tokens = checked_mul(per_segment, kMambaScanChunk);
  const std::int64_t row_blocks = checked_mul(plan.batch, plan.channel_groups);
  plan.blocks = checked_mul(row_blocks, plan.segments);
  const bool split = plan.segments > 1;
  const std::int64_t rows = checked_mul(plan.batch, plan.channels);
  plan.map_blocks = split ? checked_mul(row_blocks, plan.segments - 1) : 0;
  plan.combine_blocks = split ? ceil_div(checked_mul(rows, plan.state_size), kMambaCombineThreads) : 0;
  plan.workspace_floats = split ? checked_product(rows, plan.segments, plan.state_size + 1) : 0;
  return plan;
}

std::int64_t mamba_prefill_workspace_bytes(const MambaPrefillPlan& plan) {
  return checked_mul(plan.workspace_floats, static_cast<std::int64_t>(sizeof(float)));
}

std::int64_t mamba_prefill_cuda_workspace_bytes(const MambaShape& shape, std::int64_t tokens) {
  return mamba_prefill_workspace_bytes(plan_mamba_prefill(shape, tokens, kMambaSplitMaxMultiprocessors));
}

std::int64_t mamba_prefill_min_bytes(const MambaShape& shape, std::int64_t tokens, int element_bytes) {
  const std::int64_t e = element_bytes, f = static_cast<std::int64_t>(sizeof(float));
  return checked_sum(checked_product(4, shape.rows(), tokens, e), checked_product(2, shape.batch, tokens, shape.state_size, e),
                     checked_product(2, shape.rows(), shape.state_size, f),
                     checked_product(f, shape.channels, shape.state_size + 2));
}

std::optional<std::string> mamba_cuda_unsupported(const Cell& cell) {
  const std::int64_t n = mamba_state_size_option().integer(cell.options);
  if (n < 1 || n > kMambaMaxStateSize) {
    return "the CUDA kernels of mamba take state_size (N) 1.." + std::to_string(kMambaMaxStateSize);
  }
  const MambaShape shape{cell.batch, checked_mul(cell.heads, cell.head_dim), n};
  if (shape.rows() < 1) return "the CUDA kernels of mamba need batch * d_inner >= 1";
  if (shape.channels > std::numeric_limits<std::int32_t>::max()) return "d_inner exceeds 2^31 - 1";
  if (cell.sequence_length < 0) return "sequence_length must be >= 0";
  if (plan_mamba_decode(shape).blocks > kCudaMaxGridX) return "batch * d_inner exceeds the CUDA grid limit";
  const MambaPrefillPlan prefill = plan_mamba_prefill(shape, cell.sequence_length);
  // Unsplit; a split grid is at most two blocks per SM (mamba_prefill_segments).
  if (prefill.blocks > kCudaMaxGridX) return "batch * d_inner exceeds the CUDA grid limit (2^31 - 1 blocks)";
  if (prefill.shared_bytes > kCudaDefaultSharedBytes) return "mamba scan shared memory exceeds 48 KiB";
  return std::nullopt;
}

}  // namespace arch_bench
