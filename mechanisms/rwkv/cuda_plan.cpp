#include "mechanisms/rwkv/cuda_plan.hpp"

#include <algorithm>

#include "core/checked_size.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_plan.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_plan.hpp"

namespace arch_bench {

RwkvScanPlan plan_rwkv_scan(RwkvVersion version, std::int64_t batch_heads, std::int64_t heads, std::int64_t tokens,
                            std::int64_t dim, int multiprocessors) {
  RwkvScanPlan plan;
  plan.version = version;
  plan.batch_heads = batch_heads;
  plan.heads = heads;
  plan.tokens = tokens;
  plan.dim = static_cast<int>(dim);
  // The blocks of `threads` each: rwkv4 one thread per channel, rwkv6/7 a block per (head, columns).
  const auto blocks_with = [&](std::int64_t threads) {
    if (version == RwkvVersion::v4) return ceil_div(checked_mul(batch_heads, dim), threads);
    return checked_mul(batch_heads, ceil_div(std::max<std::int64_t>(dim, 1), threads / kRwkvCudaRowParts));
  };
  // Threads stay whole warps: 128, 64 or 32 (the halving of a power of two).
  plan.threads = static_cast<int>(
      block_size_filling_the_sms(kRwkvCudaThreads, kRwkvCudaMinThreads, multiprocessors, blocks_with));
  plan.blocks = blocks_with(plan.threads);
  if (version == RwkvVersion::v4) return plan;
  plan.columns_per_block = plan.threads / kRwkvCudaRowParts;
  plan.column_blocks = static_cast<int>(ceil_div(std::max<std::int64_t>(dim, 1), plan.columns_per_block));
  const std::int64_t rows = ceil_div(std::max<std::int64_t>(dim, 1), kRwkvCudaRowParts);
  for (const int count : kRwkvCudaRowCounts) {
    if (count >= rows) {
      plan.rows_per_lane = count;
      break;
    }
  }
  plan.staged_vectors = version == RwkvVersion::v6 ? int{kRwkv6StagedCount} : int{kRwkv7StagedCount};
  const std::size_t per_token = sizeof(float) * static_cast<std::size_t>(plan.staged_vectors) *
                                static_cast<std::size_t>(std::max<std::int64_t>(dim, 1));
  const std::int64_t fit = static_cast<std::int64_t>(kRwkvCudaTileBytes / per_token);
  plan.token_tile = static_cast<int>(std::clamp<std::int64_t>(std::min<std::int64_t>(fit, tokens), 1, kRwkvCudaMaxTokenTile));
  plan.shared_bytes = per_token * static_cast<std::size_t>(plan.token_tile);
  return plan;
}

std::optional<std::string> rwkv_cuda_unsupported(RwkvVersion version, const Cell& cell) {
  const std::string name = rwkv_mechanism_id(version);
  if (cell.head_dim < 1 || cell.head_dim > kRwkvCudaMaxHeadDim) {
    return "the CUDA kernels of " + name + " take head_dim 1.." + std::to_string(kRwkvCudaMaxHeadDim);
  }
  if (cell.batch_heads() < 1) return "the CUDA kernels of " + name + " need batch * heads >= 1";
  if (cell.sequence_length < 0) return "sequence_length must be >= 0";
  const RwkvScanPlan plan = plan_rwkv_scan(version, cell.batch_heads(), cell.heads,
                                           cell.phase == Phase::decode ? 1 : cell.sequence_length, cell.head_dim);
  if (plan.blocks > kCudaMaxGridX) {
    return "batch * heads * head_dim exceeds the CUDA grid limit of " + name + "'s kernels (2^31 - 1 blocks)";
  }
  if (plan.shared_bytes > kCudaDefaultSharedBytes) return name + ": staged tokens exceed 48 KiB of shared memory";
  // RWKV-6's bf16 prefill runs chunkwise: one block per (head, chunk of 64 tokens).
  if (version == RwkvVersion::v6 && rwkv6_cuda_prefill_is_chunked(cell) &&
      ceil_div(cell.sequence_length, kRwkv6ChunkTokens) > kCudaMaxGridX / cell.batch_heads()) {
    return "batch * heads * ceil(sequence_length / 64) exceeds the CUDA grid limit of rwkv6's chunkwise prefill "
           "(2^31 - 1 blocks)";
  }
  // RWKV-7's likewise: one prepare block per (head, chunk of 32 tokens).
  if (version == RwkvVersion::v7 && rwkv7_cuda_prefill_is_chunked(cell) &&
      ceil_div(cell.sequence_length, kRwkv7ChunkTokens) > kCudaMaxGridX / cell.batch_heads()) {
    return "batch * heads * ceil(sequence_length / 32) exceeds the CUDA grid limit of rwkv7's chunkwise prefill "
           "(2^31 - 1 blocks)";
  }
  return std::nullopt;
}

}  // namespace arch_bench
