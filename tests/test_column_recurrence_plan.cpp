// The column recurrence's CUDA launch planning (mechanisms/common/column_recurrence_plan.*), on the
// CPU, through each planner that uses it (retnet, gated_deltanet): the grid and lane maps (the same
// constexpr maps the kernel uses, replayed here) cover every element of S exactly once and write
// every output once, a column's lane group is closed under the kernel's xor shuffles, the grid
// spreads a batch-1 decode over the SMs, shared memory fits, and the cells the kernels refuse.
// One parameterised suite, so that a property of the common plan is stated once for every planner.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "mechanisms/gated_deltanet/cuda_plan.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/retnet/cuda_plan.hpp"
#include "support/cuda_listing.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

constexpr std::size_t kSharedWithoutOptIn = 48 * 1024;

// What differs between the mechanisms that plan a column recurrence.
struct ColumnPlanner {
  const char* mechanism;
  ColumnRecurrencePlan (*plan)(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk, std::int64_t dv,
                               int multiprocessors);
  std::optional<std::string> (*cuda_unsupported)(const Cell& cell);
  int staged_extra_per_token;  // floats staged per token beside q, k, v (gated_deltanet: alpha, beta)
};

std::ostream& operator<<(std::ostream& out, const ColumnPlanner& planner) { return out << planner.mechanism; }

class ColumnRecurrencePlanTest : public ::testing::TestWithParam<ColumnPlanner> {};

// For every block and thread of `plan`, replays the kernel's ownership: S elements (bh, i, j) held in
// registers and output columns (bh, j) stored (group 0 of an active column). Each must be exactly once.
void expect_exact_cover(const ColumnRecurrencePlan& plan) {
  const std::int64_t dk = plan.dk, dv = plan.dv;
  std::vector<int> state(static_cast<std::size_t>(plan.batch_heads * dk * dv), 0);
  std::vector<int> outputs(static_cast<std::size_t>(plan.batch_heads * dv), 0);
  for (std::int64_t block = 0; block < plan.blocks; ++block) {
    const std::int64_t bh = block / plan.column_blocks, column_block = block % plan.column_blocks;
    for (int t = 0; t < plan.threads; ++t) {
      const std::int64_t j = column_of_thread(plan, column_block, t);
      const int group = column_lane_group(plan, t % 32);
      ASSERT_LT(group, plan.lanes_per_column);
      if (j >= dv) continue;  // an idle lane
      if (group == 0) ++outputs[static_cast<std::size_t>(bh * dv + j)];
      for (int m = 0; m < kColumnRowsPerLane; ++m) {
        const int i = column_row(plan, group, m);
        ASSERT_LT(i, plan.padded_rows);
        if (i < dk) ++state[static_cast<std::size_t>((bh * dk + i) * dv + j)];
      }
    }
  }
  const auto once = [](const std::vector<int>& v) { return std::all_of(v.begin(), v.end(), [](int n) { return n == 1; }); };
  EXPECT_TRUE(once(state)) << "dk " << dk << " dv " << dv << " bh " << plan.batch_heads;
  EXPECT_TRUE(once(outputs)) << "dk " << dk << " dv " << dv << " bh " << plan.batch_heads;
}

TEST_P(ColumnRecurrencePlanTest, EveryStateElementAndOutputIsOwnedExactlyOnce) {
  for (const std::int64_t dk : {1, 3, 16, 17, 33, 48, 64, 100, 128, 256}) {
    for (const std::int64_t dv : {1, 5, 64, 100, 256}) {
      for (const int sms : {0, 1, 132}) {
        for (const std::int64_t bh : {1, 3, 8, 128}) expect_exact_cover(GetParam().plan(bh, 7, dk, dv, sms));
      }
    }
  }
}

TEST_P(ColumnRecurrencePlanTest, LaneGroupsAreTheKernelsShuffleGroups) {
  for (std::int64_t dk = 1; dk <= 256; ++dk) {
    const ColumnRecurrencePlan plan = GetParam().plan(8, 1, dk, 64, 132);
    const int r = plan.lanes_per_column;
    // The fewest lanes that hold dk rows, a power of two (the xor shuffle's group).
    EXPECT_EQ(r & (r - 1), 0) << dk;
    EXPECT_GE(r * kColumnRowsPerLane, dk) << dk;
    if (r > 1) {
      EXPECT_LT((r / 2) * kColumnRowsPerLane, dk) << dk;
    }
    EXPECT_EQ(plan.columns_per_warp * r, 32);
    EXPECT_EQ(plan.padded_rows, r * kColumnRowsPerLane);
    // column_sum xors lane bits columns_per_warp .. 16: the lanes it reaches are exactly the column's group.
    for (int lane = 0; lane < 32; ++lane) {
      int reached = 0;
      for (int other = 0; other < 32; ++other) {
        if (((lane ^ other) % plan.columns_per_warp) == 0) {
          ++reached;
          EXPECT_EQ(column_lane_column(plan, other), column_lane_column(plan, lane));
        }
      }
      EXPECT_EQ(reached, r);
    }
  }
}

TEST_P(ColumnRecurrencePlanTest, BlocksAreWholeWarpsAndSpreadOverTheMultiprocessors) {
  const auto plan_of = GetParam().plan;
  for (std::int64_t d = 1; d <= 256; ++d) {
    for (const std::int64_t bh : {1, 8, 128}) {
      const ColumnRecurrencePlan plan = plan_of(bh, 1, d, d, 132);
      EXPECT_EQ(plan.threads, 32 * plan.warps);
      EXPECT_GE(plan.warps, 1);
      EXPECT_LE(plan.threads, kColumnMaxThreads);
      EXPECT_EQ(plan.blocks, bh * plan.column_blocks);
      EXPECT_GE(plan.column_blocks * plan.columns_per_block, d);
      EXPECT_LT((plan.column_blocks - 1) * plan.columns_per_block, d);  // no block of idle columns only
    }
  }
  // Batch 1 x 8 heads of 64 (the seed's decode): one warp per block, 64 blocks instead of 8.
  const ColumnRecurrencePlan batch1 = plan_of(8, 1, 64, 64, 132);
  EXPECT_EQ(batch1.lanes_per_column, 4);
  EXPECT_EQ(batch1.warps, 1);
  EXPECT_EQ(batch1.blocks, 64);
  // Batch 16 x 8 heads: at least two blocks per multiprocessor of an H100/H200.
  const ColumnRecurrencePlan batch16 = plan_of(128, 8192, 64, 64, 132);
  EXPECT_GE(batch16.blocks, 264);
  EXPECT_GT(batch16.warps, 1);
  // Without an SM count: one block per head.
  EXPECT_EQ(plan_of(128, 1, 64, 64, 0).blocks, 128);
}

TEST_P(ColumnRecurrencePlanTest, StagedTokensFitInSharedMemory) {
  const int extra = GetParam().staged_extra_per_token;
  for (std::int64_t d = 1; d <= 256; ++d) {
    for (const int sms : {0, 132}) {
      const ColumnRecurrencePlan plan = GetParam().plan(8, 100, d, d, sms);
      // q, k, v and the mechanism's extra floats (gated_deltanet: the gates alpha and beta) per token.
      EXPECT_EQ(plan.extra_per_token, extra);
      EXPECT_EQ(plan.shared_bytes, sizeof(float) * plan.stage_tokens *
                                       static_cast<std::size_t>(2 * plan.padded_rows + plan.columns_per_block + extra));
      EXPECT_LE(plan.shared_bytes, kSharedWithoutOptIn) << d;
    }
  }
}

TEST_P(ColumnRecurrencePlanTest, BackendsAndUnsupportedCells) {
  const ColumnPlanner& planner = GetParam();
  const Mechanism* mechanism = find_mechanism(planner.mechanism);
  ASSERT_NE(mechanism, nullptr);
  testing::expect_lists_cuda_exactly_when_built(*mechanism);
  for (const Phase phase : {Phase::decode, Phase::prefill}) {
    Cell cell = testing::mechanism_cell(planner.mechanism, 8, 64, 8192, DType::bfloat16, phase, 16);
    EXPECT_FALSE(planner.cuda_unsupported(cell));
    EXPECT_EQ(mechanism->unsupported_on(cell, "cuda"), planner.cuda_unsupported(cell));
    cell.head_dim = 256;
    EXPECT_FALSE(planner.cuda_unsupported(cell));
    cell.head_dim = 257;
    EXPECT_TRUE(planner.cuda_unsupported(cell));
    cell.head_dim = 0;
    EXPECT_TRUE(planner.cuda_unsupported(cell));
  }
  EXPECT_FALSE(mechanism->unsupported_on(testing::mechanism_cell(planner.mechanism, 8, 257, 1, DType::float32), "cpu"));
}

INSTANTIATE_TEST_SUITE_P(Planners, ColumnRecurrencePlanTest,
                         ::testing::Values(ColumnPlanner{"retnet", plan_retnet_cuda, retnet_cuda_unsupported, 0},
                                           ColumnPlanner{"gated_deltanet", plan_gated_deltanet_cuda,
                                                         gated_deltanet_cuda_unsupported, kGatedDeltaNetStagedGates}),
                         [](const ::testing::TestParamInfo<ColumnPlanner>& info) {
                           return std::string(info.param.mechanism);
                         });

}  // namespace
}  // namespace arch_bench
