#include "mechanisms/common/chunk_delta_rule_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/checked_size.hpp"
#include "mechanisms/common/chunk_pass_grid.hpp"

namespace arch_bench {

bool chunk_delta_rule_supports(std::int64_t dk, std::int64_t dv) {
  return fits_wmma_tiles(dk, kDeltaRuleFragment, kDeltaRuleMaxDim) &&
         fits_wmma_tiles(dv, kDeltaRuleFragment, kDeltaRuleMaxDim);
}

int chunk_delta_rule_value_tile(std::int64_t batch_heads, std::int64_t dv, int multiprocessors) {
  return chunk_pass_value_tile(kDeltaRuleValueTiles, batch_heads, dv, multiprocessors);
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
  place_chunk_pass_grid(plan, batch_heads, tokens, kC, dv,
                        chunk_delta_rule_value_tile(batch_heads, dv, multiprocessors));
  plan.dk = static_cast<int>(dk);
  plan.dv = static_cast<int>(dv);
  plan.ld_k = plan.dk + kDeltaRuleBf16Pad;
  plan.ld_v = plan.dv + kDeltaRuleBf16Pad;
  plan.ld_c = kC + kDeltaRuleBf16Pad;
  plan.ld_a = kC + kDeltaRuleFloatPad;
  plan.ld_acc = std::max({kC, plan.dk, plan.dv}) + kDeltaRuleFloatPad;
  plan.ld_n = plan.value_tile + kDeltaRuleBf16Pad;
  plan.ld_s = plan.value_tile + kDeltaRuleFloatPad;

  // Regions in the order of the layouts' fields (chunk_pass_grid.hpp).
  constexpr std::size_t kBf16 = 2, kFloat = 4, kRows = kC;
  const std::size_t key_rows = tile_bytes(kRows, plan.ld_k, kBf16), chunk_rows = tile_bytes(kRows, plan.ld_c, kBf16);
  const std::size_t value_rows = tile_bytes(kRows, plan.ld_n, kBf16), token_floats = kRows * kFloat;
  plan.prepare_layout = place_shared_layout<DeltaRulePrepareLayout>(
      key_rows, key_rows, key_rows, tile_bytes(kRows, plan.ld_v, kBf16), chunk_rows,
      tile_bytes(kRows, plan.ld_a, kFloat), tile_bytes(kRows, plan.ld_acc, kFloat), token_floats, token_floats);
  plan.pass_layout = place_shared_layout<DeltaRulePassLayout>(
      key_rows, key_rows, key_rows, chunk_rows, value_rows, value_rows, tile_bytes(plan.dk, plan.ld_s, kFloat),
      tile_bytes(plan.dk, plan.ld_n, kBf16), tile_bytes(kRows, plan.ld_s, kFloat));

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
