#include "mechanisms/common/chunk_delta_rule_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/checked_size.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/common/smem_layout.hpp"

namespace arch_bench {

namespace {

bool fits(std::int64_t d) { return d >= kDeltaRuleFragment && d <= kDeltaRuleMaxDim && d % kDeltaRuleFragment == 0; }

}  // namespace

bool chunk_delta_rule_supports(std::int64_t dk, std::int64_t dv) { return fits(dk) && fits(dv); }

int chunk_delta_rule_value_tile(std::int64_t batch_heads, std::int64_t dv, int multiprocessors) {
  for (const int tile : kDeltaRuleValueTiles) {
    if (dv % tile != 0) continue;
    if (multiprocessors <= 0 || batch_heads * (dv / tile) >= 2 * static_cast<std::int64_t>(multiprocessors)) {
      return tile;
    }
  }
  return kDeltaRuleValueTiles[std::size(kDeltaRuleValueTiles) - 1];
}

ChunkDeltaRulePlan plan_chunk_delta_rule(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                         std::int64_t dv, int multiprocessors) {
  if (!chunk_delta_rule_supports(dk, dv)) {
    throw std::invalid_argument("the chunkwise delta-rule prefill takes dk and dv multiples of 16 up to " +
                                std::to_string(kDeltaRuleMaxDim) + ", not " + std::to_string(dk) + " x " +
                                std::to_string(dv));
  }
  if (batch_heads < 0 || tokens < 0) throw std::invalid_argument("batch_heads and tokens must be >= 0");
  constexpr int kC = kDeltaRuleChunk;
  ChunkDeltaRulePlan plan;
  plan.batch_heads = batch_heads;
  plan.tokens = tokens;
  plan.dk = static_cast<int>(dk);
  plan.dv = static_cast<int>(dv);
  plan.chunks = ceil_div(tokens, kC);
  plan.prepare_blocks = checked_product(batch_heads, plan.chunks);
  plan.value_tile = chunk_delta_rule_value_tile(batch_heads, dv, multiprocessors);
  plan.value_tiles = plan.dv / plan.value_tile;
  plan.pass_blocks = checked_product(batch_heads, plan.value_tiles);
  plan.ld_k = plan.dk + kDeltaRuleBf16Pad;
  plan.ld_v = plan.dv + kDeltaRuleBf16Pad;
  plan.ld_c = kC + kDeltaRuleBf16Pad;
  plan.ld_a = kC + kDeltaRuleFloatPad;
  plan.ld_acc = std::max({kC, plan.dk, plan.dv}) + kDeltaRuleFloatPad;
  plan.ld_n = plan.value_tile + kDeltaRuleBf16Pad;
  plan.ld_s = plan.value_tile + kDeltaRuleFloatPad;

  constexpr std::size_t kBf16 = 2, kFloat = 4, kRows = kC;
  const auto ld = [](int x) { return static_cast<std::size_t>(x); };
  std::size_t end = 0;
  DeltaRulePrepareLayout& prepare = plan.prepare_layout;
  prepare.q = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  prepare.k = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  prepare.k_scaled = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  prepare.v = place_shared_region(end, kRows * ld(plan.ld_v) * kBf16);
  prepare.t = place_shared_region(end, kRows * ld(plan.ld_c) * kBf16);
  prepare.a = place_shared_region(end, kRows * ld(plan.ld_a) * kFloat);
  prepare.acc = place_shared_region(end, kRows * ld(plan.ld_acc) * kFloat);
  prepare.decay = place_shared_region(end, kRows * kFloat);
  prepare.beta = place_shared_region(end, kRows * kFloat);
  prepare.bytes = end;

  end = 0;
  DeltaRulePassLayout& pass = plan.pass_layout;
  pass.w = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  pass.k = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  pass.q = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  pass.p = place_shared_region(end, kRows * ld(plan.ld_c) * kBf16);
  pass.u = place_shared_region(end, kRows * ld(plan.ld_n) * kBf16);
  pass.v_new = place_shared_region(end, kRows * ld(plan.ld_n) * kBf16);
  pass.s = place_shared_region(end, ld(plan.dk) * ld(plan.ld_s) * kFloat);
  pass.s_operand = place_shared_region(end, ld(plan.dk) * ld(plan.ld_n) * kBf16);
  pass.acc = place_shared_region(end, kRows * ld(plan.ld_s) * kFloat);
  pass.bytes = end;

  const std::int64_t rows = checked_product(plan.prepare_blocks, kC);
  plan.workspace_key_elements = checked_product(rows, dk);
  plan.workspace_score_elements = checked_product(rows, kC);
  plan.workspace_value_elements = checked_product(rows, dv);
  plan.workspace_decay_elements = plan.prepare_blocks;
  checked_add(checked_product(2, checked_add(checked_product(3, plan.workspace_key_elements),
                                             checked_add(plan.workspace_score_elements,
                                                         plan.workspace_value_elements))),
              checked_product(4, plan.workspace_decay_elements));
  return plan;
}

std::int64_t chunk_delta_rule_workspace_bytes(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                              std::int64_t dv) {
  if (!chunk_delta_rule_supports(dk, dv) || batch_heads < 0 || tokens < 0) return 0;
  return plan_chunk_delta_rule(batch_heads, tokens, dk, dv, 0).workspace_bytes();
}

}  // namespace arch_bench
