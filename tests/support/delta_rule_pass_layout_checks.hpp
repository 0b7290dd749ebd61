#pragma once
// Checks of the delta-rule pass kernel's double-buffered shared memory
// (mechanisms/common/chunk_delta_rule_plan.hpp): every region 128-byte aligned, inside the block's
// layout and the sm_90 opt-in limit; each stage's operand regions inside that stage; the two stages
// disjoint from each other and from every other region (chunk c + 1's copies land in one while
// chunk c's products read the other, and V', S, S's copy and the accumulator are written meanwhile).
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "mechanisms/common/chunk_delta_rule_plan.hpp"
#include "chunk_layout_checks.hpp"

namespace arch_bench::testing {

inline void expect_pass_layout_double_buffered(int dk, int tile, const DeltaRulePassOperands& stage,
                                               const DeltaRulePassLayout& at) {
  constexpr std::size_t kRows = kDeltaRuleChunk;
  const std::size_t keys = kRows * (dk + kDeltaRuleBf16Pad) * 2u;
  const std::size_t scores = kRows * (kDeltaRuleChunk + kDeltaRuleBf16Pad) * 2u;
  const std::size_t values = kRows * (tile + kDeltaRuleBf16Pad) * 2u;
  const std::size_t state_floats = static_cast<std::size_t>(dk) * (tile + kDeltaRuleFloatPad) * 4u;
  const std::size_t state_operand = static_cast<std::size_t>(dk) * (tile + kDeltaRuleBf16Pad) * 2u;
  const std::size_t accumulator = kRows * (tile + kDeltaRuleFloatPad) * 4u;
  SCOPED_TRACE(::testing::Message() << "dk " << dk << " tile " << tile);
  // Inside a stage: W, K~, Q~, P, U's tile in order, within the stage's bytes.
  expect_disjoint_aligned({{stage.w, keys}, {stage.k, keys}, {stage.q, keys}, {stage.p, scores}, {stage.u, values}},
                          stage.bytes);
  // The block: both stages, then V', S, S's bf16 copy, the accumulator, in order and disjoint.
  expect_disjoint_aligned({{at.even, stage.bytes},
                           {at.odd, stage.bytes},
                           {at.v_new, values},
                           {at.s, state_floats},
                           {at.s_operand, state_operand},
                           {at.acc, accumulator}},
                          at.bytes);
  EXPECT_LE(at.even + stage.bytes, at.odd) << "the two stages are disjoint";
  EXPECT_LE(at.bytes, kDeltaRuleMaxSharedBytes) << "the block's opt-in limit";
  // Each operand region of each stage is a 128-byte aligned absolute offset as well.
  for (const std::size_t base : {at.even, at.odd}) {
    for (const std::size_t offset : {stage.w, stage.k, stage.q, stage.p, stage.u}) {
      EXPECT_EQ((base + offset) % 128, 0u);
    }
  }
}

inline void expect_pass_layout_double_buffered(const ChunkDeltaRulePlan& plan) {
  expect_pass_layout_double_buffered(plan.dk, plan.value_tile, plan.pass_operands, plan.pass_layout);
  EXPECT_EQ(plan.ld_n, plan.value_tile + kDeltaRuleBf16Pad);
  EXPECT_EQ(plan.ld_s, plan.value_tile + kDeltaRuleFloatPad);
  EXPECT_EQ(plan.pass_blocks_per_sm, chunk_delta_rule_pass_blocks_per_sm(plan.pass_layout.bytes));
}

}  // namespace arch_bench::testing
