#pragma once
// The small fp32 matrix products of the chunkwise prefills (one chunk of 64 tokens against a head's
// dk x dv state): C[M, N] (+)= A[M, K] B[K, N], row-major with leading dimensions. Written as a
// register tile of kTileRows rows x kTileVectors vectors (GCC/Clang vector extensions, so the
// compiler emits one FMA per accumulator per k and never spills C to memory): a plain
// "C[i][:] += a * B[k][:]" loop loads and stores C on every k and is store-bound at about half
// of the FMA rate. The tile is sized for the register file the build targets (-march=native):
//   AVX-512 (32 zmm):  6 rows x 4 vectors of 16 = 24 accumulators + 4 B vectors + 1 broadcast
//     (4 rows, 16 accumulators, ran the 64 x 64 x 64 product at 70-87 GFLOP/s on one Zen 4 core,
//     6 rows at 101-110, 8 x 3 at 103-114 but 48 columns wide, 12 x 2 at 57-68: 4 B loads and 6
//     broadcasts per 24 FMAs instead of 4 and 4 per 16; OpenBLAS 0.3.21's sgemm read 89-105)
//   AVX/AVX2 (16 ymm): 6 rows x 2 vectors of 8  = 12 accumulators + 2 B vectors + 1 broadcast
//   SSE (16 xmm):      4 rows x 2 vectors of 4  =  8 accumulators + 2 B vectors + 1 broadcast
// A tile wider than the register file (the AVX-512 shape on AVX2 is 32 ymm accumulators) spills
// on every k and runs at a fraction of the FMA rate. The code is the same for every width, so a
// build is correct on any x86-64 (or other) target; only the speed depends on the shape.
#include <algorithm>
#include <cstdint>

#include "core/kernel_helpers.hpp"

namespace arch_bench {

// What the caller knows about the product, so that the tile loop skips work that is known zero or
// not needed.
struct MatmulShape {
  bool accumulate = false;  // C += A B (else C = A B)
  bool lower_a = false;     // A[i][k] == 0 for k > i (a causal weight matrix): k stops at the row block
  bool lower_c = false;     // only C[i][j] with j <= i is needed (a causal score matrix); others may hold anything
};

ARCH_BENCH_KERNEL_HELPERS_BEGIN
namespace detail {

#if defined(__AVX512F__)
inline constexpr int kVectorBytes = 64;
inline constexpr int kTileRows = 6;
inline constexpr int kTileVectors = 4;
#elif defined(__AVX__)
inline constexpr int kVectorBytes = 32;
inline constexpr int kTileRows = 6;
inline constexpr int kTileVectors = 2;
#else
inline constexpr int kVectorBytes = 16;
inline constexpr int kTileRows = 4;
inline constexpr int kTileVectors = 2;
#endif

using vfloat = float __attribute__((vector_size(kVectorBytes), aligned(4), may_alias));
inline constexpr std::int64_t kLanes = kVectorBytes / 4;


template <int MR, int NV>
inline void matmul_tile(std::int64_t k_end, const float* __restrict a, std::int64_t lda, const float* __restrict b,
                        std::int64_t ldb, float* __restrict c, std::int64_t ldc, bool accumulate) {
  vfloat acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      acc[r][v] = accumulate ? *reinterpret_cast<const vfloat*>(c + r * ldc + v * kLanes) : vfloat{};
    }
  }
  for (std::int64_t k = 0; k < k_end; ++k) {
    vfloat row[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) row[v] = *reinterpret_cast<const vfloat*>(b + k * ldb + v * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float x = a[r * lda + k];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] += x * row[v];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) *reinterpret_cast<vfloat*>(c + r * ldc + v * kLanes) = acc[r][v];
  }
}

// Columns [j, n) of rows [0, rows) one at a time: the tail narrower than one vector.
inline void matmul_columns(std::int64_t rows, std::int64_t j, std::int64_t n, std::int64_t k_end, const float* a,
                           std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                           bool accumulate) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t col = j; col < n; ++col) {
      float sum = accumulate ? c[r * ldc + col] : 0.0f;
      for (std::int64_t k = 0; k < k_end; ++k) sum += a[r * lda + k] * b[k * ldb + col];
      c[r * ldc + col] = sum;
    }
  }
}

// One tile of MR rows x `vectors` (1 .. kTileVectors) vectors.
template <int MR, int NV = kTileVectors>
inline void matmul_partial_tile(std::int64_t vectors, std::int64_t k_end, const float* a, std::int64_t lda,
                                const float* b, std::int64_t ldb, float* c, std::int64_t ldc, bool accumulate) {
  if constexpr (NV >= 1) {
    if (vectors == NV) {
      matmul_tile<MR, NV>(k_end, a, lda, b, ldb, c, ldc, accumulate);
    } else {
      matmul_partial_tile<MR, NV - 1>(vectors, k_end, a, lda, b, ldb, c, ldc, accumulate);
    }
  }
}

// Rows [i, i + MR) of C.
template <int MR>
inline void matmul_row_block(std::int64_t i, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
                             const float* b, std::int64_t ldb, float* c, std::int64_t ldc, MatmulShape shape) {
  const std::int64_t k_end = shape.lower_a ? std::min(k, i + MR) : k;
  const std::int64_t n_needed = shape.lower_c ? std::min(n, i + MR) : n;
  const float* a_rows = a + i * lda;
  float* c_rows = c + i * ldc;
  std::int64_t j = 0;
  for (; j + kTileVectors * kLanes <= n_needed; j += kTileVectors * kLanes) {
    matmul_tile<MR, kTileVectors>(k_end, a_rows, lda, b + j, ldb, c_rows + j, ldc, shape.accumulate);
  }
  // The last needed columns: whole vectors while they fit in the row (computing a few columns
  // that lower_c does not need is cheaper than a scalar tail), as one tile of that many vectors.
  // One vector at a time, each tile broadcast the rows of A again and ran MR FMA chains: under
  // lower_c most of a causal score matrix's tiles are these (row block i needs i + MR columns),
  // and Gated DeltaNet's chunkwise prefill spent 12% of its time in them (Zen 4, T = 2048).
  const std::int64_t vectors = std::min((n_needed - j + kLanes - 1) / kLanes, (n - j) / kLanes);
  if (vectors > 0) {
    matmul_partial_tile<MR>(vectors, k_end, a_rows, lda, b + j, ldb, c_rows + j, ldc, shape.accumulate);
    j += vectors * kLanes;
  }
  if (j < n_needed) matmul_columns(MR, j, n_needed, k_end, a_rows, lda, b, ldb, c_rows, ldc, shape.accumulate);
}

// The last m - i < kTileRows rows as one shorter block (not row by row: a one-row tile has only
// kTileVectors independent FMA chains, too few to hide the FMA latency).
template <int MR = kTileRows - 1>
inline void matmul_remainder_rows(std::int64_t rows, std::int64_t i, std::int64_t n, std::int64_t k, const float* a,
                                  std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                                  MatmulShape shape) {
  if constexpr (MR >= 1) {
    if (rows == MR) {
      matmul_row_block<MR>(i, n, k, a, lda, b, ldb, c, ldc, shape);
    } else {
      matmul_remainder_rows<MR - 1>(rows, i, n, k, a, lda, b, ldb, c, ldc, shape);
    }
  }
}

}  // namespace detail

// C[m, n] (+)= A[m, k] B[k, n]; A, B, C row-major with leading dimensions lda, ldb, ldc (in floats).
// C must not overlap A or B.
inline void chunk_matmul(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
                         const float* b, std::int64_t ldb, float* c, std::int64_t ldc, MatmulShape shape = {}) {
  constexpr int kRows = detail::kTileRows;
  std::int64_t i = 0;
  for (; i + kRows <= m; i += kRows) detail::matmul_row_block<kRows>(i, n, k, a, lda, b, ldb, c, ldc, shape);
  if (i < m) detail::matmul_remainder_rows(m - i, i, n, k, a, lda, b, ldb, c, ldc, shape);
}

ARCH_BENCH_KERNEL_HELPERS_END
}  // namespace arch_bench
