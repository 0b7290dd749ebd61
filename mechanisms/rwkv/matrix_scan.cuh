#pragma once
// What the matrix-state scans (rwkv6/cuda.cu, rwkv7/cuda.cu) share: a lane's slice of one value
// column of the state (key rows part, part + 8, ...; cuda_plan.hpp) moved between global memory and
// registers, the sum over a column's kRwkvCudaRowParts lanes, and the walk over a head's tokens a
// staged tile at a time.
#include <cuda_runtime.h>

#include <cstdint>

#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/rwkv/cuda_plan.hpp"

namespace arch_bench {

// The sum over the kRwkvCudaRowParts consecutive lanes of a column, in every one of them. The whole
// warp calls it (padding lanes included, with 0): full-mask shuffles need every lane.
__device__ __forceinline__ float column_sum(float x) {
#pragma unroll
  for (int offset = kRwkvCudaRowParts / 2; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// f(q, i) for each of the lane's key rows i (rwkv_scan_key_row(at.part, q), q in order) inside the
// head, i < dim (load_column's s[q] holds row i of the lane's column).
template <int kRows, class F>
__device__ __forceinline__ void for_lane_key_rows(const RwkvScanThread& at, int dim, F f) {
#pragma unroll
  for (int q = 0; q < kRows; ++q) {
    const int i = rwkv_scan_key_row(at.part, q);
    if (i < dim) f(q, i);
  }
}

// The token's output o_j: the sum of the column's lane partials, stored at out_row[column] (the
// token's row of out, in its storage type) by the column's first lane; padding columns store nothing.
template <class T>
__device__ __forceinline__ void store_column_sum(T* out_row, int dim, const RwkvScanThread& at, float partial) {
  const float o = column_sum(partial);
  if (at.column < dim && at.part == 0) store_float(out_row + at.column, o);
}

// Rows past dim (and every row of a padding column) are 0 in registers and never stored.
template <int kRows>
__device__ __forceinline__ void load_column(const float* __restrict__ state, int dim, const RwkvScanThread& at,
                                            float (&s)[kRows]) {
#pragma unroll
  for (int q = 0; q < kRows; ++q) {
    const int row = rwkv_scan_key_row(at.part, q);
    s[q] = (at.column < dim && row < dim) ? state[static_cast<std::int64_t>(row) * dim + at.column] : 0.0f;
  }
}
template <int kRows>
__device__ __forceinline__ void store_column(float* __restrict__ state, int dim, const RwkvScanThread& at,
                                             const float (&s)[kRows]) {
#pragma unroll
  for (int q = 0; q < kRows; ++q) {
    const int row = rwkv_scan_key_row(at.part, q);
    if (at.column < dim && row < dim) state[static_cast<std::int64_t>(row) * dim + at.column] = s[q];
  }
}

// Moves every per-token pointer by `offset` elements: to the head's first token, then past a tile.
// The loops index with ints inside a tile (fewer 64-bit registers; at 64 rows per lane that avoided a
// spill).
template <class Offset, class... Pointers>
__device__ __forceinline__ void advance_tokens(Offset offset, Pointers&... pointers) {
  ((pointers += offset), ...);
}

// This head's tokens, a tile of at most token_tile at a time: stage(token, src, c) writes key c of
// token tt into the staged tile (token = staged + tt * stride; src = tt * dim + c, the element within
// the tile), then step(token, tt) runs the tile's tokens in order, then next_tile(n * dim) moves the
// per-token pointers past the tile's n tokens.
template <class Stage, class Step, class NextTile>
__device__ __forceinline__ void scan_token_tiles(float* staged, int stride, std::int64_t tokens, int dim,
                                                 int token_tile, Stage stage, Step step, NextTile next_tile) {
  for (std::int64_t t0 = 0; t0 < tokens; t0 += token_tile) {
    const int n = static_cast<int>(min(static_cast<std::int64_t>(token_tile), tokens - t0));
    __syncthreads();  // the previous tile is consumed
    // Unrolled so that several elements' global loads are in flight at once (the staging pass is
    // latency-bound: a few warps per SM).
#pragma unroll 4
    for (int e = threadIdx.x; e < n * dim; e += blockDim.x) {
      const int tt = e / dim, c = e % dim;
      stage(staged + tt * stride, tt * dim + c, c);
    }
    __syncthreads();
    for (int tt = 0; tt < n; ++tt) step(staged + tt * stride, tt);
    next_tile(n * dim);
  }
}

// Calls launch.template operator()<kRows>() with the compiled row count the plan chose.
template <class Launch>
void with_row_count(int rows_per_lane, Launch launch) {
  if (rows_per_lane <= 8) {
    launch.template operator()<8>();
  } else if (rows_per_lane <= 16) {
    launch.template operator()<16>();
  } else {
    launch.template operator()<32>();
  }
}

}  // namespace arch_bench
