#include "mechanisms/rwkv/rwkv7/chunk_plan.hpp"

#include <iterator>
#include <stdexcept>
#include <string>

#include "core/checked_size.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/common/smem_layout.hpp"

namespace arch_bench {

bool rwkv7_chunk_supports(std::int64_t dim) {
  return dim >= kRwkv7ChunkFragment && dim <= kRwkv7ChunkMaxDim && dim % kRwkv7ChunkFragment == 0;
}

bool rwkv7_cuda_prefill_is_chunked(const Cell& cell) {
  return cell.phase == Phase::prefill && cell.dtype == DType::bfloat16 && rwkv7_chunk_supports(cell.head_dim);
}

int rwkv7_chunk_value_tile(std::int64_t batch_heads, std::int64_t dim, int multiprocessors) {
  for (const int tile : kRwkv7ChunkValueTiles) {
    if (dim % tile != 0) continue;
    if (multiprocessors <= 0 || batch_heads * (dim / tile) >= 2 * static_cast<std::int64_t>(multiprocessors)) {
      return tile;
    }
  }
  return kRwkv7ChunkValueTiles[std::size(kRwkv7ChunkValueTiles) - 1];
}

Rwkv7ChunkPlan plan_rwkv7_chunk(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, int multiprocessors) {
  if (!rwkv7_chunk_supports(dim)) {
    throw std::invalid_argument("rwkv7's chunkwise prefill takes head_dim a multiple of 16 up to " +
                                std::to_string(kRwkv7ChunkMaxDim) + ", not " + std::to_string(dim));
  }
  if (batch_heads < 0 || tokens < 0) {
    throw std::invalid_argument("rwkv7's chunkwise prefill needs batch_heads >= 0 and tokens >= 0");
  }
  constexpr int kC = kRwkv7ChunkTokens;
  Rwkv7ChunkPlan plan;
  plan.batch_heads = batch_heads;
  plan.tokens = tokens;
  plan.dim = static_cast<int>(dim);
  plan.chunks = ceil_div(tokens, kC);
  plan.prepare_blocks = checked_product(batch_heads, plan.chunks);
  plan.value_tile = rwkv7_chunk_value_tile(batch_heads, dim, multiprocessors);
  plan.value_tiles = plan.dim / plan.value_tile;
  plan.pass_blocks = checked_product(batch_heads, plan.value_tiles);
  plan.ld_k = plan.dim + kRwkv7ChunkBf16Pad;
  plan.ld_c = kC + kRwkv7ChunkBf16Pad;
  plan.ld_score = kC + kRwkv7ChunkFloatPad;
  plan.ld_acc = plan.dim + kRwkv7ChunkFloatPad;
  plan.ld_n = plan.value_tile + kRwkv7ChunkBf16Pad;
  plan.ld_s = plan.value_tile + kRwkv7ChunkFloatPad;

  constexpr std::size_t kBf16 = 2, kFloat = 4, kRows = kC;
  const auto ld = [](int x) { return static_cast<std::size_t>(x); };
  std::size_t end = 0;
  Rwkv7ChunkPrepareLayout& prepare = plan.prepare_layout;
  prepare.decay = place_shared_region(end, kRows * ld(plan.dim) * kFloat);
  prepare.a = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  prepare.r = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  prepare.b = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  prepare.k = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  prepare.v = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  prepare.scores = place_shared_region(end, 4 * kRows * ld(plan.ld_score) * kFloat);
  prepare.t = place_shared_region(end, kRows * ld(plan.ld_c) * kBf16);
  prepare.acc = place_shared_region(end, kRows * ld(plan.ld_acc) * kFloat);
  prepare.bytes = end;

  end = 0;
  Rwkv7ChunkPassLayout& pass = plan.pass_layout;
  pass.w = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  pass.r = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  pass.b = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  pass.k = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  pass.m = place_shared_region(end, kRows * ld(plan.ld_c) * kBf16);
  pass.p_rb = place_shared_region(end, kRows * ld(plan.ld_c) * kBf16);
  pass.p_rk = place_shared_region(end, kRows * ld(plan.ld_c) * kBf16);
  pass.v = place_shared_region(end, kRows * ld(plan.ld_n) * kBf16);
  pass.u = place_shared_region(end, kRows * ld(plan.ld_n) * kBf16);
  pass.s = place_shared_region(end, ld(plan.dim) * ld(plan.ld_s) * kFloat);
  pass.s_operand = place_shared_region(end, ld(plan.dim) * ld(plan.ld_n) * kBf16);
  pass.acc = place_shared_region(end, kRows * ld(plan.ld_s) * kFloat);
  pass.bytes = end;

  const std::int64_t rows = checked_product(plan.prepare_blocks, kC);
  plan.workspace_row_elements = checked_product(rows, dim);
  plan.workspace_score_elements = checked_product(rows, kC);
  plan.workspace_decay_elements = checked_product(plan.prepare_blocks, dim);
  // Every byte count above fits an int64 (workspace_bytes() computes without checks).
  checked_add(checked_product(2, checked_add(checked_product(4, plan.workspace_row_elements),
                                             checked_product(3, plan.workspace_score_elements))),
              checked_add(16, checked_product(4, plan.workspace_decay_elements)));
  return plan;
}

std::int64_t rwkv7_cuda_workspace_bytes(const Cell& cell) {
  if (!rwkv7_cuda_prefill_is_chunked(cell) || cell.batch_heads() < 0 || cell.sequence_length < 0) return 0;
  return plan_rwkv7_chunk(cell.batch_heads(), cell.sequence_length, cell.head_dim, 0).workspace_bytes();
}

}  // namespace arch_bench
