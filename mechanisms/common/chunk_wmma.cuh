#pragma once
// The device pieces the two-kernel chunkwise tensor-core prefills share (common/chunk_delta_rule.cuh
// and rwkv/rwkv7/chunk_cuda.cu; their geometry: chunk_pass_grid.hpp): the block's (head, index),
// regions of dynamic shared memory, 16-byte row copies, the state columns a pass block owns, and
// the bf16 wmma 16 x 16 x 16 tile steps with fp32 accumulators. Written once so that a fix in one
// kernel cannot miss the other. Each tile step is one load of each operand and one mma_sync in the
// order the kernels wrote them inline: calling it changes no operation and no accumulation order.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstddef>
#include <cstdint>

namespace arch_bench::chunk_wmma {

namespace wmma = nvcuda::wmma;

inline constexpr int kF = 16;  // the wmma tile (m = n = k = 16)

using RowA = wmma::fragment<wmma::matrix_a, kF, kF, kF, __nv_bfloat16, wmma::row_major>;
using ColA = wmma::fragment<wmma::matrix_a, kF, kF, kF, __nv_bfloat16, wmma::col_major>;
using RowB = wmma::fragment<wmma::matrix_b, kF, kF, kF, __nv_bfloat16, wmma::row_major>;
using ColB = wmma::fragment<wmma::matrix_b, kF, kF, kF, __nv_bfloat16, wmma::col_major>;
using Accumulator = wmma::fragment<wmma::accumulator, kF, kF, kF, float>;

// The (head, chunk) or (head, value tile) of this block: block = bh * per_head + index. The grid is
// one-dimensional (< 2^31 blocks, the callers check), so 32-bit division suffices.
struct HeadIndex {
  std::int64_t bh;
  std::int64_t index;
};
__device__ __forceinline__ HeadIndex head_index_of_block(std::int64_t per_head) {
  const unsigned n = static_cast<unsigned>(per_head);
  return {static_cast<std::int64_t>(blockIdx.x / n), static_cast<std::int64_t>(blockIdx.x % n)};
}

// Region `offset` of the block's dynamic shared memory as T*: the offsets are the plan's layouts
// (128-byte aligned, smem_layout.hpp), and every extern __shared__ array of a kernel is the same
// memory, so this names no more than the kernel's own declaration would.
template <class T>
__device__ __forceinline__ T* shared_region(std::size_t offset) {
  extern __shared__ __align__(128) unsigned char shared[];
  return reinterpret_cast<T*>(shared + offset);
}

// rows x width bf16 (width a multiple of 16) from src (row stride src_ld) to dst (row stride ld),
// 16 bytes at a time: every row start is 16-byte aligned on both sides (the plan's strides).
__device__ __forceinline__ void copy_rows(__nv_bfloat16* __restrict__ dst, int ld,
                                          const __nv_bfloat16* __restrict__ src, int src_ld, int rows, int width) {
  const int vectors = width / 8;
  for (int e = threadIdx.x; e < rows * vectors; e += blockDim.x) {
    const int r = e / vectors, c = e % vectors;
    *reinterpret_cast<uint4*>(dst + r * ld + c * 8) = *reinterpret_cast<const uint4*>(src + r * src_ld + c * 8);
  }
}

// rows x width fp32 (row stride ld) rounded to bf16 into a workspace region ([rows][width], row-major).
__device__ __forceinline__ void round_rows(__nv_bfloat16* __restrict__ out, const float* __restrict__ acc, int ld,
                                           int rows, int width) {
  for (int e = threadIdx.x; e < rows * width; e += blockDim.x) {
    const int i = e / width, c = e % width;
    out[e] = __float2bfloat16_rn(acc[i * ld + c]);
  }
}

// A pass block's columns j0 .. j0 + n of a head's state ([rows][width] fp32, global) to and from
// shared memory ([rows][ld_s]).
__device__ __forceinline__ void load_state_columns(float* __restrict__ s, int ld_s,
                                                   const float* __restrict__ head_state, int width, int j0,
                                                   int rows, int n) {
  for (int e = threadIdx.x; e < rows * n; e += blockDim.x) {
    const int i = e / n, j = e % n;
    s[i * ld_s + j] = head_state[i * width + j0 + j];
  }
}
__device__ __forceinline__ void store_state_columns(float* __restrict__ head_state, int width, int j0,
                                                    const float* __restrict__ s, int ld_s, int rows, int n) {
  for (int e = threadIdx.x; e < rows * n; e += blockDim.x) {
    const int i = e / n, j = e % n;
    head_state[i * width + j0 + j] = s[i * ld_s + j];
  }
}

// Lower tile l (0 <= l < tiles (tiles + 1) / 2) of a square of tiles: (ti, tj) with tj <= ti, row by row.
__device__ __forceinline__ void lower_tile(int l, int& ti, int& tj) {
  ti = 0;
  while (l > ti) {
    l -= ti + 1;
    ++ti;
  }
  tj = l;
}

// Calls tile(ti, tj) for this warp's share of a tiles_m x tiles_n grid of output tiles: warp w takes
// tiles w, w + warps, ... (row by row).
template <class Tile>
__device__ __forceinline__ void for_warp_tiles(int tiles_m, int tiles_n, Tile&& tile) {
  const int warp = static_cast<int>(threadIdx.x / 32), warps = static_cast<int>(blockDim.x / 32);
  for (int t = warp; t < tiles_m * tiles_n; t += warps) tile(t / tiles_n, t % tiles_n);
}

__device__ __forceinline__ Accumulator zero_accumulator() {
  Accumulator acc;
  wmma::fill_fragment(acc, 0.0f);
  return acc;
}

// acc into fp32 rows (row stride ld) at `at`.
__device__ __forceinline__ void store_tile(float* at, const Accumulator& acc, int ld) {
  wmma::store_matrix_sync(at, acc, ld, wmma::mem_row_major);
}

// One tile step each, acc += X Y with a and b pointing at the tiles (row-major bf16 in memory, row
// strides lda and ldb):
//   mma_ab:  X = A, Y = B;    mma_abt: X = A, Y = B^T (B loaded column-major);
//   mma_atb: X = A^T (A loaded column-major), Y = B.
__device__ __forceinline__ void mma_ab(Accumulator& acc, const __nv_bfloat16* a, int lda, const __nv_bfloat16* b,
                                       int ldb) {
  RowA x;
  RowB y;
  wmma::load_matrix_sync(x, a, lda);
  wmma::load_matrix_sync(y, b, ldb);
  wmma::mma_sync(acc, x, y, acc);
}
__device__ __forceinline__ void mma_abt(Accumulator& acc, const __nv_bfloat16* a, int lda, const __nv_bfloat16* b,
                                        int ldb) {
  RowA x;
  ColB y;  // B^T as matrix_b: element (r, n) is B[n][r], at n * ldb + r: column-major
  wmma::load_matrix_sync(x, a, lda);
  wmma::load_matrix_sync(y, b, ldb);
  wmma::mma_sync(acc, x, y, acc);
}
__device__ __forceinline__ void mma_atb(Accumulator& acc, const __nv_bfloat16* a, int lda, const __nv_bfloat16* b,
                                        int ldb) {
  ColA x;  // A^T as matrix_a: element (r, m) is A[m][r], at m * lda + r: column-major
  RowB y;
  wmma::load_matrix_sync(x, a, lda);
  wmma::load_matrix_sync(y, b, ldb);
  wmma::mma_sync(acc, x, y, acc);
}

// Panels of `count` tile steps in order (kk = 0, 1, ...): acc += sum_kk X(ti, kk) Y(kk, tj) for output
// tile (ti, tj), A and B row-major bf16 (row strides lda, ldb):
//   mma_ab_panel:  X = A, Y = B;   mma_abt_panel: X = A, Y = B^T;   mma_atb_panel: X = A^T, Y = B.
__device__ __forceinline__ void mma_ab_panel(Accumulator& acc, const __nv_bfloat16* a, int lda,
                                             const __nv_bfloat16* b, int ldb, int ti, int tj, int count) {
  for (int kk = 0; kk < count; ++kk) mma_ab(acc, a + ti * kF * lda + kk * kF, lda, b + kk * kF * ldb + tj * kF, ldb);
}
__device__ __forceinline__ void mma_abt_panel(Accumulator& acc, const __nv_bfloat16* a, int lda,
                                              const __nv_bfloat16* b, int ldb, int ti, int tj, int count) {
  for (int kk = 0; kk < count; ++kk) mma_abt(acc, a + ti * kF * lda + kk * kF, lda, b + tj * kF * ldb + kk * kF, ldb);
}
__device__ __forceinline__ void mma_atb_panel(Accumulator& acc, const __nv_bfloat16* a, int lda,
                                              const __nv_bfloat16* b, int ldb, int ti, int tj, int count) {
  for (int kk = 0; kk < count; ++kk) mma_atb(acc, a + kk * kF * lda + ti * kF, lda, b + kk * kF * ldb + tj * kF, ldb);
}

}  // namespace arch_bench::chunk_wmma
