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

// A head's token rows (q, k [tokens][dk]; v, out [tokens][dv]) and state ([dk][dv]): the slices of
// the [bh, tokens, d] inputs and output and the [bh, dk, dv] state the lane's head `at.bh` owns.
template <class T>
struct ColumnHead {
  const T* q;
  const T* k;
  const T* v;
  T* out;
  float* state;
};
template <class T>
__device__ __forceinline__ ColumnHead<T> column_head(const ColumnRecurrencePlan& plan, const ColumnLane& at,
                                                     const T* q, const T* k, const T* v, T* out, float* state) {
  const std::int64_t tokens = plan.tokens;
  return {q + at.bh * tokens * plan.dk, k + at.bh * tokens * plan.dk, v + at.bh * tokens * plan.dv,
          out + at.bh * tokens * plan.dv, state + at.bh * plan.dk * plan.dv};
}

// The tokens of the stage starting at t0: stage_tokens, or what is left of the sequence.
__device__ __forceinline__ int stage_tokens_from(const ColumnRecurrencePlan& plan, std::int64_t t0) {
  return static_cast<int>(plan.tokens - t0 < plan.stage_tokens ? plan.tokens - t0 : plan.stage_tokens);
}

// Tokens [t0, t0 + n) of a head into shared memory: its q and k rows ([n][padded_rows]) and the
// block's value columns of v ([n][columns_per_block]). The caller synchronises before and after.
template <class T>
__device__ __forceinline__ void stage_token_block(float* __restrict__ q_stage, float* __restrict__ k_stage,
                                                  float* __restrict__ v_stage, const ColumnHead<T>& head,
                                                  std::int64_t t0, int n, const ColumnRecurrencePlan& plan,
                                                  int first_column) {
  stage_rows(q_stage, head.q + t0 * plan.dk, n, plan.dk, plan.padded_rows);
  stage_rows(k_stage, head.k + t0 * plan.dk, n, plan.dk, plan.padded_rows);
  stage_value_columns(v_stage, head.v + t0 * plan.dv, n, plan.dv, first_column, plan.columns_per_block);
}

// The walk of every column recurrence over a head's tokens: the lane's rows of S into registers, the
// tokens a stage at a time (stage_token_block and stage_more(t0, n), what else the mechanism stages;
// a barrier; prepare(n), the mechanism's pass over the staged rows, which synchronises itself if it
// writes them; then step(s, t0, t) for each token of the stage in order), and S back.
template <class T, class StageMore, class Prepare, class Step>
__device__ __forceinline__ void walk_column_tokens(float* __restrict__ q_stage, float* __restrict__ k_stage,
                                                   float* __restrict__ v_stage, const ColumnHead<T>& head,
                                                   const ColumnRecurrencePlan& plan, const ColumnLane& at,
                                                   int first_column, StageMore stage_more, Prepare prepare,
                                                   Step step) {
  float s[kColumnRowsPerLane];
  load_column_rows(s, head.state, plan, at);
  for (std::int64_t t0 = 0; t0 < plan.tokens; t0 += plan.stage_tokens) {
    const int n = stage_tokens_from(plan, t0);
    __syncthreads();  // the previous stage has been read by every warp
    stage_token_block(q_stage, k_stage, v_stage, head, t0, n, plan, first_column);
    stage_more(t0, n);
    __syncthreads();
    prepare(n);
    for (int t = 0; t < n; ++t) step(s, t0, t);
  }
  store_column_rows(s, head.state, plan, at);
}

// The end of a token's step in every column recurrence: S = decay S + k u^T on the lane's rows (u
// the column's write), then the read-out o = S^T q summed over the column's lanes and stored by its
// first lane at `out_at`. Four partial sums: the read-out is a chain of 16 dependent FMAs otherwise,
// and a token's latency is the whole prefill's critical path (a column's tokens are sequential).
template <class T>
__device__ __forceinline__ void decay_write_read(float (&s)[kColumnRowsPerLane], float decay, const float* k_row,
                                                 float u, const float* q_row, const ColumnRecurrencePlan& plan,
                                                 const ColumnLane& at, T* out_at) {
  float o[4] = {};
#pragma unroll
  for (int m = 0; m < kColumnRowsPerLane; ++m) {
    s[m] = fmaf(decay, s[m], k_row[m * plan.lanes_per_column] * u);
    o[m % 4] = fmaf(q_row[m * plan.lanes_per_column], s[m], o[m % 4]);
  }
  const float read = column_sum((o[0] + o[1]) + (o[2] + o[3]), plan.columns_per_warp);
  if (at.active && at.group == 0) store_float(out_at, read);
}

}  // namespace arch_bench
