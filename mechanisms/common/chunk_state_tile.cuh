#pragma once
// The tile work of the chunkwise CUDA prefills of linear attention and Performer, written once: the
// per-chunk state tile U_c = K~_c^T V_c, the output stage's key loop (A = Q~_c K~_c^T and
// Q~_c S_in) and its masked A V product and store. Geometry and shared layouts are
// chunk_tile.hpp's. What enters a tile is the mechanism's: it passes loaders (phi of a stored key,
// a weighted feature, ...), called only for elements inside the sequence and the head; everything
// outside loads as 0, so a row past the sequence adds nothing.
//
// Every product is fp32 FMA on SIMT cores, in the order written here (fp32 storage must meet 1e-4
// against the fp64 reference, which tf32 tensor cores would not); the loops are the kernels' own,
// force-inlined, so each kernel compiles as if written out.
#include <cstdint>

#include "mechanisms/common/chunk_tile.hpp"
#include "mechanisms/common/cuda_storage.cuh"

namespace arch_bench {

// acc[r][c] += sum over m < steps, in order, of A(row r, m) B(m, column c) on thread t's 4 x 4
// register tile; A(row, m) = a[row * kARowStride + m * kAStepStride], B(m, col) = b[m * 64 + col].
template <int kARowStride, int kAStepStride>
__device__ __forceinline__ void accumulate_tile_product(float (&acc)[4][4], const float* a, const float* b,
                                                        int steps, int t) {
  for (int m = 0; m < steps; ++m) {
    float x[4], y[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) x[r] = a[chunk_tile_row(t, r) * kARowStride + m * kAStepStride];
#pragma unroll
    for (int c = 0; c < 4; ++c) y[c] = b[m * kChunkTile + chunk_tile_column(t, c)];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[r][c] = fmaf(x[r], y[c], acc[r][c]);
    }
  }
}

// V_c's 64 rows of value columns [j0, j0 + 64) into v_tile [m][j]; value(m, j) for m < rows, j < dv.
template <class ValueLoad>
__device__ __forceinline__ void load_value_tile(float* v_tile, int rows, int j0, int dv, ValueLoad value) {
  for (int e = threadIdx.x; e < kChunkTile * kChunkTile; e += blockDim.x) {
    const int m = e / kChunkTile, j = e % kChunkTile;
    v_tile[e] = m < rows && j0 + j < dv ? value(m, j0 + j) : 0.0f;
  }
}

// The chunk-state stage for one block: U_c = K~_c^T V_c on the 64 x 64 tile (key_tile, value_tile)
// of S into chunk_states [bh][chunk][width][dv], and (value tile 0) the column sums of K~_c into
// chunk_sums [bh][chunk][width]. key(m, i) is K~ at token m of the chunk and key column i < width.
template <class KeyLoad, class ValueLoad>
__device__ __forceinline__ void chunk_state_tile(float* shared, const ChunkTile& tile, int rows, int width, int dv,
                                                 std::int64_t chunks, KeyLoad key, ValueLoad value,
                                                 float* __restrict__ chunk_states, float* __restrict__ chunk_sums) {
  float* k_tile = shared + ChunkStateSharedLayout::k;  // [m][i]
  float* v_tile = shared + ChunkStateSharedLayout::v;  // [m][j]
  const std::int64_t bh = tile.bh, chunk = tile.chunk;
  const int i0 = static_cast<int>(tile.key_tile) * kChunkTile, j0 = static_cast<int>(tile.value_tile) * kChunkTile;

  for (int e = threadIdx.x; e < kChunkTile * kChunkTile; e += blockDim.x) {
    const int m = e / kChunkTile, c = e % kChunkTile;
    const bool row = m < rows;
    k_tile[e] = row && i0 + c < width ? key(m, i0 + c) : 0.0f;
    v_tile[e] = row && j0 + c < dv ? value(m, j0 + c) : 0.0f;
  }
  __syncthreads();

  const int t = threadIdx.x;
  float acc[4][4] = {};
  accumulate_tile_product<1, kChunkTile>(acc, k_tile, v_tile, rows, t);
  float* tile_out = chunk_states + (bh * chunks + chunk) * width * dv;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = i0 + chunk_tile_row(t, r);
    if (i >= width) continue;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int j = j0 + chunk_tile_column(t, c);
      if (j < dv) tile_out[static_cast<std::int64_t>(i) * dv + j] = acc[r][c];
    }
  }
  if (tile.value_tile == 0 && threadIdx.x < kChunkTile && i0 + static_cast<int>(threadIdx.x) < width) {
    float sum = 0.0f;
    for (int m = 0; m < rows; ++m) sum += k_tile[m * kChunkTile + threadIdx.x];
    chunk_sums[(bh * chunks + chunk) * width + i0 + threadIdx.x] = sum;
  }
}

// The output stage's key loop: over the key dimension (width) in steps of 32, thread t's register
// tiles of A = Q~_c K~_c^T (acc_a, rows ty + 16a, key tokens tx + 16b) and of Q~_c S_in (acc_o,
// value columns j0 + tx + 16b), and for threads < 64 the row's Q~_r . z_in (denominator).
// query(m, i) and key(m, i) are Q~ and K~ at token m of the chunk and key column i < width.
template <class QueryLoad, class KeyLoad>
__device__ __forceinline__ void chunk_output_key_loop(float* shared, int rows, int width, int dv, int j0,
                                                      const float* __restrict__ s_in, const float* __restrict__ z_in,
                                                      QueryLoad query, KeyLoad key, float (&acc_a)[4][4],
                                                      float (&acc_o)[4][4], float& denominator) {
  using Layout = ChunkOutputSharedLayout;
  constexpr int kQ = kChunkTileStep + kChunkTilePad;  // row stride of the Q~, K~ tiles
  float* q_tile = shared + Layout::q;  // [m][i]
  float* k_tile = shared + Layout::k;  // [m][i]
  float* s_tile = shared + Layout::s;  // [i][j]
  float* z_tile = shared + Layout::z;  // [i]
  const int t = threadIdx.x;
  for (int i0 = 0; i0 < width; i0 += kChunkTileStep) {
    for (int e = threadIdx.x; e < kChunkTile * kChunkTileStep; e += blockDim.x) {
      const int m = e / kChunkTileStep, c = e % kChunkTileStep;
      const bool inside = m < rows && i0 + c < width;
      q_tile[m * kQ + c] = inside ? query(m, i0 + c) : 0.0f;
      k_tile[m * kQ + c] = inside ? key(m, i0 + c) : 0.0f;
    }
    for (int e = threadIdx.x; e < kChunkTileStep * kChunkTile; e += blockDim.x) {
      const int i = e / kChunkTile, j = e % kChunkTile;
      s_tile[e] = i0 + i < width && j0 + j < dv ? s_in[static_cast<std::int64_t>(i0 + i) * dv + j0 + j] : 0.0f;
    }
    if (threadIdx.x < kChunkTileStep) {
      z_tile[threadIdx.x] = i0 + static_cast<int>(threadIdx.x) < width ? z_in[i0 + threadIdx.x] : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int i = 0; i < kChunkTileStep; ++i) {
      float a[4], b[4], s[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) a[r] = q_tile[chunk_tile_row(t, r) * kQ + i];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        b[c] = k_tile[chunk_tile_column(t, c) * kQ + i];
        s[c] = s_tile[i * kChunkTile + chunk_tile_column(t, c)];
      }
#pragma unroll
      for (int r = 0; r < 4; ++r) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          acc_a[r][c] = fmaf(a[r], b[c], acc_a[r][c]);
          acc_o[r][c] = fmaf(a[r], s[c], acc_o[r][c]);
        }
      }
    }
    if (threadIdx.x < kChunkTile) {
      for (int i = 0; i < kChunkTileStep; ++i) {
        denominator = fmaf(q_tile[threadIdx.x * kQ + i], z_tile[i], denominator);
      }
    }
    __syncthreads();  // the next step (or A and V after the loop) overwrite the tiles
  }
}

// acc_o += mask(A) V_c over the chunk's rows, from the masked A [64][65] and V_c [64][64] of the
// output layout (both written, and published by a barrier, before the call).
__device__ __forceinline__ void accumulate_masked_a_v(float* shared, int rows, float (&acc_o)[4][4]) {
  using Layout = ChunkOutputSharedLayout;
  accumulate_tile_product<kChunkTile + kChunkTilePad, 1>(acc_o, shared + Layout::a, shared + Layout::v, rows,
                                                         threadIdx.x);
}

// Thread t's outputs of the chunk: row r's acc_o divided by the row's denominator (the layout's
// per-row denominators, written before the barrier this call starts with).
template <class T>
__device__ __forceinline__ void store_chunk_output(const float* shared, const float (&acc_o)[4][4], int rows,
                                                   int j0, int dv, T* out_rows) {
  const float* denominators = shared + ChunkOutputSharedLayout::denominator;
  const int t = threadIdx.x;
  __syncthreads();  // denominators
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = chunk_tile_row(t, r);
    if (row >= rows) continue;
    const float inverse = 1.0f / denominators[row];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int j = j0 + chunk_tile_column(t, c);
      if (j < dv) store_float(out_rows + static_cast<std::int64_t>(row) * dv + j, acc_o[r][c] * inverse);
    }
  }
}

}  // namespace arch_bench
