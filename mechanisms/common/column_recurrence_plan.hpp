#pragma once
// Launch geometry of the column recurrences: CUDA kernels that run a dk x dv recurrent state S token
// by token with S in registers (retnet's and gated_deltanet's decode step and recurrent prefill,
// mechanisms/<id>/cuda.cu). Plain C++, compiled in every build and tested on the CPU.
//
// Value column j of S belongs to a group of R = lanes_per_column lanes of one warp; lane r of the
// group holds rows r, r + R, r + 2R, ... (kColumnRowsPerLane of them) in registers. A column's
// reductions over rows (S^T k, S^T q) are then shuffles inside the group, and columns share nothing
// but the token's q, k (and gates), which a block stages in shared memory kColumnStageTokens
// tokens at a time. Lane l of a warp is column l % columns_per_warp and row group
// l / columns_per_warp, so the group's lanes differ in the bits above columns_per_warp and an xor
// shuffle over offsets columns_per_warp .. 16 sums exactly one column.
#include <cstddef>
#include <cstdint>

namespace arch_bench {

inline constexpr int kColumnRowsPerLane = 16;  // rows of S per lane, in registers
inline constexpr int kColumnStageTokens = 16;  // tokens staged in shared memory per pass
inline constexpr int kColumnMaxWarps = 8;
inline constexpr int kColumnMaxThreads = 32 * kColumnMaxWarps;  // the kernels' __launch_bounds__
// Widest dk: one whole warp per column.
inline constexpr std::int64_t kColumnMaxRows = 32 * kColumnRowsPerLane;

struct ColumnRecurrencePlan {
  std::int64_t batch_heads = 0;
  std::int64_t tokens = 0;  // steps per launch: 1 for a decode step, L for the recurrent prefill
  int dk = 0;
  int dv = 0;
  int lanes_per_column = 1;   // R: a power of two with R * kColumnRowsPerLane >= dk
  int columns_per_warp = 32;  // 32 / R
  int padded_rows = 0;        // R * kColumnRowsPerLane: the staged q/k row stride (rows >= dk are 0)
  int warps = 1;              // per block
  int columns_per_block = 0;  // columns_per_warp * warps
  std::int64_t column_blocks = 0;  // blocks per head: ceil(dv / columns_per_block)
  std::int64_t blocks = 0;         // batch_heads * column_blocks, one-dimensional grid
  int threads = 32;
  int stage_tokens = kColumnStageTokens;
  int extra_per_token = 0;  // staged floats per token beside q, k, v (gated_deltanet: alpha, beta)
  // q [stage][padded_rows], k [stage][padded_rows], v [stage][columns_per_block], extra [stage][extra]
  std::size_t shared_bytes = 0;
};

// Warps per block shrink (down to one) until the grid has at least two blocks per multiprocessor, so
// that batch 1 with 8 heads still spreads over the GPU; multiprocessors <= 0 means one block per head
// of up to kColumnMaxWarps warps. dk in 1..kColumnMaxRows, dv >= 1.
ColumnRecurrencePlan plan_column_recurrence(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                            std::int64_t dv, int multiprocessors, int extra_per_token);

// Index maps shared by the kernels and the CPU tests (constexpr: callable from device code with
// --expt-relaxed-constexpr), so the tests replay the mapping the kernels use.
constexpr int column_lane_column(const ColumnRecurrencePlan& plan, int lane) { return lane % plan.columns_per_warp; }
constexpr int column_lane_group(const ColumnRecurrencePlan& plan, int lane) { return lane / plan.columns_per_warp; }
// Row of S held in register m by row group r.
constexpr int column_row(const ColumnRecurrencePlan& plan, int group, int m) { return group + plan.lanes_per_column * m; }
// The value column (of its head) that thread t of column block b owns; >= dv for idle threads.
constexpr std::int64_t column_of_thread(const ColumnRecurrencePlan& plan, std::int64_t column_block, int thread) {
  return column_block * plan.columns_per_block + (thread / 32) * plan.columns_per_warp +
         column_lane_column(plan, thread % 32);
}

}  // namespace arch_bench
