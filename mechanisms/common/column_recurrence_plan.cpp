#include "mechanisms/common/column_recurrence_plan.hpp"

#include <algorithm>

#include "mechanisms/common/cuda_launch_limits.hpp"

namespace arch_bench {

ColumnRecurrencePlan plan_column_recurrence(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                            std::int64_t dv, int multiprocessors, int extra_per_token) {
  ColumnRecurrencePlan plan;
  plan.batch_heads = batch_heads;
  plan.tokens = tokens;
  plan.dk = static_cast<int>(dk);
  plan.dv = static_cast<int>(dv);
  while (static_cast<std::int64_t>(plan.lanes_per_column) * kColumnRowsPerLane < dk && plan.lanes_per_column < 32) {
    plan.lanes_per_column *= 2;
  }
  plan.columns_per_warp = 32 / plan.lanes_per_column;
  plan.padded_rows = plan.lanes_per_column * kColumnRowsPerLane;
  // Enough warps for a whole head, at most kColumnMaxWarps; then fewer while the grid is too small
  // to give every multiprocessor two blocks (a decode step at batch 1 is 8 heads).
  const std::int64_t most_warps =
      std::clamp<std::int64_t>(ceil_div(std::max<std::int64_t>(dv, 1), plan.columns_per_warp), 1, kColumnMaxWarps);
  plan.warps = static_cast<int>(block_size_filling_the_sms(most_warps, 1, multiprocessors, [&](std::int64_t w) {
    return batch_heads * ceil_div(dv, plan.columns_per_warp * w);
  }));
  plan.threads = 32 * plan.warps;
  plan.columns_per_block = plan.columns_per_warp * plan.warps;
  plan.column_blocks = ceil_div(dv, plan.columns_per_block);
  plan.blocks = batch_heads * plan.column_blocks;
  plan.extra_per_token = extra_per_token;
  plan.shared_bytes = sizeof(float) * static_cast<std::size_t>(plan.stage_tokens) *
                      static_cast<std::size_t>(2 * plan.padded_rows + plan.columns_per_block + extra_per_token);
  return plan;
}

}  // namespace arch_bench
