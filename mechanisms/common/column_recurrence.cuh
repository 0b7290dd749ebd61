#pragma once
// Device side of the column recurrences (geometry and lane layout: column_recurrence_plan.hpp):
// where a thread's column and rows are, its rows of S between global memory and registers, the sum
// over a column's lane group, and the staging of a block's tokens in shared memory. The mechanism's
// kernel writes the step itself; these helpers are force-inlined into it.
#include <cstdint>

#include "mechanisms/common/column_recurrence_plan.hpp"
#include "mechanisms/common/cuda_storage.cuh"

namespace arch_bench {

// What a thread owns: head bh, value column `column` (of dv), row group `group` (rows group + R m).
struct ColumnLane {
  std::int64_t bh;
  int column_block;
  int column;
  int group;
  int local_column;  // the column's index inside the block's staged values
  bool active;       // column < dv; idle lanes still take part in every shuffle and barrier
};

// The grid is one-dimensional (< 2^31 blocks) and column_blocks <= dv: 32-bit division, not the
// 64-bit division subroutine, whose call would spill registers.
__device__ __forceinline__ ColumnLane column_lane(const ColumnRecurrencePlan& plan) {
  const unsigned column_blocks = static_cast<unsigned>(plan.column_blocks);
  const int column_block = static_cast<int>(blockIdx.x % column_blocks);
  const int lane = static_cast<int>(threadIdx.x % 32);
  ColumnLane at;
  at.bh = blockIdx.x / column_blocks;
  at.column_block = column_block;
  at.column = static_cast<int>(column_of_thread(plan, column_block, static_cast<int>(threadIdx.x)));
  at.group = column_lane_group(plan, lane);
  at.local_column = static_cast<int>(threadIdx.x / 32) * plan.columns_per_warp + column_lane_column(plan, lane);
  at.active = at.column < plan.dv;
  return at;
}

// The sum of x over the lanes of this thread's column group, in every lane of the group.
__device__ __forceinline__ float column_sum(float x, int columns_per_warp) {
  for (int offset = columns_per_warp; offset < 32; offset <<= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// The thread's rows of column `column` of one head's S [dk][dv] into registers (0 outside S), and back.
__device__ __forceinline__ void load_column_rows(float (&s)[kColumnRowsPerLane], const float* __restrict__ head_state,
                                                 const ColumnRecurrencePlan& plan, const ColumnLane& at) {
#pragma unroll
  for (int m = 0; m < kColumnRowsPerLane; ++m) {
    const int i = column_row(plan, at.group, m);
    s[m] = at.active && i < plan.dk ? head_state[static_cast<std::int64_t>(i) * plan.dv + at.column] : 0.0f;
  }
}
__device__ __forceinline__ void store_column_rows(const float (&s)[kColumnRowsPerLane], float* __restrict__ head_state,
                                                  const ColumnRecurrencePlan& plan, const ColumnLane& at) {
#pragma unroll
  for (int m = 0; m < kColumnRowsPerLane; ++m) {
    const int i = column_row(plan, at.group, m);
    if (at.active && i < plan.dk) head_state[static_cast<std::int64_t>(i) * plan.dv + at.column] = s[m];
  }
}

// Rows [0, n) of a [tokens, width] slice (consecutive in memory: coalesced) into dst [n][padded],
// widened to fp32, columns >= width as 0.
template <class T>
__device__ __forceinline__ void stage_rows(float* __restrict__ dst, const T* __restrict__ src, int n, int width,
                                           int padded) {
  for (int e = threadIdx.x; e < n * padded; e += blockDim.x) {
    const int row = e / padded, c = e % padded;
    dst[e] = c < width ? load_float(src[static_cast<std::int64_t>(row) * width + c]) : 0.0f;
  }
}

// The block's value columns [first, first + columns) of rows [0, n) of a [tokens, dv] slice into
// dst [n][columns], columns >= dv as 0.
template <class T>
__device__ __forceinline__ void stage_value_columns(float* __restrict__ dst, const T* __restrict__ src, int n, int dv,
                                                    int first, int columns) {
  for (int e = threadIdx.x; e < n * columns; e += blockDim.x) {
    const int row = e / columns, c = e % columns;
    dst[e] = first + c < dv ? load_float(src[static_cast<std::int64_t>(row) * dv + first + c]) : 0.0f;
  }
}

}  // namespace arch_bench
