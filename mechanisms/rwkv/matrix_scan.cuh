#pragma once
// What the matrix-state scans (rwkv6/cuda.cu, rwkv7/cuda.cu) share: a lane's slice of one value
// column of the state (key rows part, part + 8, ...; cuda_plan.hpp) moved between global memory and
// registers, and the sum over a column's kRwkvCudaRowParts lanes.
#include <cuda_runtime.h>

#include <cstdint>

#include "mechanisms/rwkv/cuda_plan.hpp"

namespace arch_bench {

// The sum over the kRwkvCudaRowParts consecutive lanes of a column, in every one of them. The whole
// warp calls it (padding lanes included, with 0): full-mask shuffles need every lane.
__device__ __forceinline__ float column_sum(float x) {
#pragma unroll
  for (int offset = kRwkvCudaRowParts / 2; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
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
