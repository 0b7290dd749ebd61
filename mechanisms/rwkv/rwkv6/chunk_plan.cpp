#include "mechanisms/rwkv/rwkv6/chunk_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/checked_size.hpp"
#include "mechanisms/common/chunk_pass_grid.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/common/smem_layout.hpp"

namespace arch_bench {

bool rwkv6_chunk_supports(std::int64_t dim) {
  return dim >= kRwkv6ChunkFragment && dim <= kRwkv6ChunkMaxDim && dim % kRwkv6ChunkFragment == 0;
}

bool rwkv6_cuda_prefill_is_chunked(const Cell& cell) {
  return cell.phase == Phase::prefill && cell.dtype == DType::bfloat16 && rwkv6_chunk_supports(cell.head_dim);
}

Rwkv6ChunkPlan plan_rwkv6_chunk(std::int64_t batch_heads, std::int64_t heads, std::int64_t tokens, std::int64_t dim) {
  if (!rwkv6_chunk_supports(dim)) {
    throw std::invalid_argument("rwkv6's chunkwise prefill takes head_dim a multiple of 16 up to " +
                                std::to_string(kRwkv6ChunkMaxDim) + ", not " + std::to_string(dim));
  }
  if (batch_heads < 0 || heads < 1 || tokens < 0) {
    throw std::invalid_argument("rwkv6's chunkwise prefill needs batch_heads >= 0, heads >= 1, tokens >= 0");
  }
  Rwkv6ChunkPlan plan;
  plan.heads = heads;
  plan.dim = static_cast<int>(dim);
  place_chunk_state_grid(plan, batch_heads, tokens, kRwkv6ChunkTokens, dim * dim);
  plan.ld_bf16 = plan.dim + kRwkv6ChunkBf16Pad;
  plan.ld_beta = plan.dim + kRwkv6ChunkBetaPad;
  plan.ld_p = kRwkv6ChunkTokens + kRwkv6ChunkBf16Pad;

  constexpr std::size_t kBf16 = 2, kFloat = 4, kRows = kRwkv6ChunkTokens, kSubs = kRwkv6ChunkSubs;
  constexpr std::size_t kStage = std::size_t{kRwkv6ChunkWarps} * kRwkv6ChunkFragment * kRwkv6ChunkFragment * kFloat;
  const auto n = [](int x) { return static_cast<std::size_t>(x); };
  const std::size_t bf16_rows = kRows * n(plan.ld_bf16) * kBf16;  // r, k, K~, V: [C][ld_bf16]
  std::size_t end = 0;
  // Kernel (1): the staging tiles are used only after K~ is built, when beta is dead.
  const std::size_t state_beta = kRows * n(plan.dim) * kFloat;
  plan.state_layout.beta = place_shared_region(end, std::max(state_beta, kStage));
  plan.state_layout.stage = plan.state_layout.beta;
  plan.state_layout.totals = place_shared_region(end, kSubs * n(plan.dim) * kFloat);
  plan.state_layout.k = place_shared_region(end, bf16_rows);
  plan.state_layout.v = place_shared_region(end, bf16_rows);
  plan.state_layout.bytes = end;

  // Kernel (3): V and the staging tiles take beta's region once (c) has consumed beta.
  end = 0;
  Rwkv6ChunkOutputLayout& out = plan.output_layout;
  out.r = place_shared_region(end, bf16_rows);
  out.k = place_shared_region(end, bf16_rows);
  std::size_t late = 0;  // V then the staging tiles, laid out from beta's offset
  const std::size_t v_at = place_shared_region(late, bf16_rows);
  const std::size_t stage_at = place_shared_region(late, kStage);
  out.beta = place_shared_region(end, std::max(kRows * n(plan.ld_beta) * kFloat, late));
  out.v = out.beta + v_at;
  out.stage = out.beta + stage_at;
  out.totals = place_shared_region(end, kSubs * n(plan.dim) * kFloat);
  out.u = place_shared_region(end, n(plan.dim) * kFloat);
  out.q_local = place_shared_region(end, n(kRwkv6ChunkQueryRows) * n(plan.ld_bf16) * kBf16);
  out.far_keys = place_shared_region(end, n(kRwkv6ChunkFarKeyRows) * n(plan.ld_bf16) * kBf16);
  out.p = place_shared_region(end, kRows * n(plan.ld_p) * kBf16);
  out.bytes = end;

  plan.workspace_state_elements = checked_product(batch_heads, plan.chunks, dim, dim) / 2;  // dim^2 is even
  plan.workspace_decay_elements = checked_product(batch_heads, plan.chunks, dim);
  checked_product(4, checked_add(plan.workspace_state_elements, plan.workspace_decay_elements));
  return plan;
}

std::int64_t rwkv6_cuda_workspace_bytes(const Cell& cell) {
  const std::int64_t bh = cell.batch_heads(), dim = cell.head_dim;
  if (!rwkv6_cuda_prefill_is_chunked(cell) || bh < 0 || cell.sequence_length < 0) return 0;
  // As plan_rwkv6_chunk's workspace_bytes(), without a plan (which refuses cells with no heads).
  const std::int64_t chunks = ceil_div(cell.sequence_length, kRwkv6ChunkTokens);
  return checked_product(4, checked_add(checked_product(bh, chunks, dim, dim) / 2, checked_product(bh, chunks, dim)));
}

}  // namespace arch_bench
