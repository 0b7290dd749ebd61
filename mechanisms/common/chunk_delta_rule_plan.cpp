#include "mechanisms/common/chunk_delta_rule_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/checked_size.hpp"
#include "mechanisms/common/chunk_pass_grid.hpp"
#include "mechanisms/common/chunk_pass_occupancy.hpp"

namespace arch_bench {

bool chunk_delta_rule_supports(std::int64_t dk, std::int64_t dv) {
  return fits_wmma_tiles(dk, kDeltaRuleFragment, kDeltaRuleMaxDim) &&
         fits_wmma_tiles(dv, kDeltaRuleFragment, kDeltaRuleMaxDim);
}

namespace {

constexpr int kC = kDeltaRuleChunk;
constexpr std::size_t kBf16 = 2, kFloat = 4, kRows = kC;

// Row strides of the pass kernel's value tiles (bf16) and of its S and accumulator (fp32).
constexpr int value_stride(int tile) { return tile + kDeltaRuleBf16Pad; }
constexpr int state_stride(int tile) { return tile + kDeltaRuleFloatPad; }

}  // namespace

DeltaRulePassOperands chunk_delta_rule_pass_operands(int dk, int tile) {
  const std::size_t key_rows = tile_bytes(kRows, dk + kDeltaRuleBf16Pad, kBf16);
  return place_shared_layout<DeltaRulePassOperands>(key_rows, key_rows, key_rows,
                                                    tile_bytes(kRows, kC + kDeltaRuleBf16Pad, kBf16),
                                                    tile_bytes(kRows, value_stride(tile), kBf16));
}

DeltaRulePassLayout chunk_delta_rule_pass_layout(int dk, int tile) {
  const std::size_t stage = chunk_delta_rule_pass_operands(dk, tile).bytes;
  return place_shared_layout<DeltaRulePassLayout>(
      stage, stage, tile_bytes(kRows, value_stride(tile), kBf16), tile_bytes(dk, state_stride(tile), kFloat),
      tile_bytes(dk, value_stride(tile), kBf16), tile_bytes(kRows, state_stride(tile), kFloat));
}

int chunk_delta_rule_pass_blocks_per_sm(std::size_t pass_bytes) {
  return chunk_pass_blocks_per_sm(pass_bytes, kDeltaRulePassThreads);
}

std::int64_t chunk_delta_rule_pass_cost(std::int64_t batch_heads, std::int64_t dk, std::int64_t dv, int tile,
                                        int blocks_per_sm, int multiprocessors) {
  constexpr std::int64_t kF = kDeltaRuleFragment, kRowTiles = kC / kF;
  const std::int64_t columns = tile / kF, keys = dk / kF;
  const std::int64_t steps = chunk_pass_warp_steps({{kRowTiles * columns, keys},               // W S_c
                                                    {kRowTiles * columns, keys + kRowTiles},   // Q~ S_c + P V'
                                                    {keys * columns, kRowTiles}},              // K~^T V'
                                                   kDeltaRulePassThreads / 32);
  const std::int64_t blocks = checked_product(batch_heads, dv / tile);
  return chunk_pass_waves(blocks, multiprocessors, blocks_per_sm) * steps;
}

int chunk_delta_rule_value_tile(std::int64_t batch_heads, std::int64_t dk, std::int64_t dv, int multiprocessors) {
  return cheapest_chunk_pass_tile(kDeltaRuleValueTiles, dv, multiprocessors, [&](int tile) {
    const std::size_t bytes = chunk_delta_rule_pass_layout(static_cast<int>(dk), tile).bytes;
    const int per_sm = chunk_delta_rule_pass_blocks_per_sm(bytes);
    return chunk_delta_rule_pass_cost(batch_heads, dk, dv, tile, per_sm, multiprocessors);
  });
}

ChunkDeltaRulePlan plan_chunk_delta_rule(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                         std::int64_t dv, int multiprocessors) {
  if (!chunk_delta_rule_supports(dk, dv)) {
    throw std::invalid_argument("the chunkwise delta-rule prefill takes dk and dv multiples of 16 up to " +
                                std::to_string(kDeltaRuleMaxDim) + ", not " + std::to_string(dk) + " x " +
                                std::to_string(dv));
  }
  if (batch_heads < 0 || tokens < 0) throw std::invalid_argument("batch_heads and tokens must be >= 0");
  ChunkDeltaRulePlan plan;
  place_chunk_pass_grid(plan, batch_heads, tokens, kC, dv,
                        chunk_delta_rule_value_tile(batch_heads, dk, dv, multiprocessors));
  plan.dk = static_cast<int>(dk);
  plan.dv = static_cast<int>(dv);
  plan.ld_k = plan.dk + kDeltaRuleBf16Pad;
  plan.ld_v = plan.dv + kDeltaRuleBf16Pad;
  plan.ld_c = kC + kDeltaRuleBf16Pad;
  plan.ld_a = kC + kDeltaRuleFloatPad;
  plan.ld_acc = std::max({kC, plan.dk, plan.dv}) + kDeltaRuleFloatPad;
  plan.ld_n = value_stride(plan.value_tile);
  plan.ld_s = state_stride(plan.value_tile);

  // Regions in the order of the layouts' fields (chunk_pass_grid.hpp).
  const std::size_t key_rows = tile_bytes(kRows, plan.ld_k, kBf16), token_floats = kRows * kFloat;
  plan.prepare_layout = place_shared_layout<DeltaRulePrepareLayout>(
      key_rows, key_rows, key_rows, tile_bytes(kRows, plan.ld_v, kBf16), tile_bytes(kRows, plan.ld_c, kBf16),
      tile_bytes(kRows, plan.ld_a, kFloat), tile_bytes(kRows, plan.ld_acc, kFloat), token_floats, token_floats);
  plan.pass_operands = chunk_delta_rule_pass_operands(plan.dk, plan.value_tile);
  plan.pass_layout = chunk_delta_rule_pass_layout(plan.dk, plan.value_tile);
  plan.pass_blocks_per_sm = chunk_delta_rule_pass_blocks_per_sm(plan.pass_layout.bytes);

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
