#pragma once
// The prefill microkernels of the fp32-widening CPU sets (cpu_avx2.cpp, cpu_avx512.cpp), written once
// over a vector type V that each set brings; prefill_blocks.hpp walks the blocks and calls them.
// Per 64-query block and 64-key block:
//   S^T = K_blk Q_blk^T   register tiles of kTileRows keys x C vectors of queries, the key broadcast
//                         from memory (S^T, keys x queries, is what lets the softmax state vectorise
//                         across queries without a transpose)
//   online softmax down the key rows of S^T, V::kLanes queries a register
//   O = diag(c) O + P V   tiles of kTileRows queries x C vectors of channels
// bf16 tiles are widened to fp32 once per block, so the microkernels only see fp32.
//
// Every function here must carry its set's target attribute, so the includer defines
// ARCH_BENCH_SIMD_TARGET (its attribute) first, and one translation unit serves one set. Everything
// has internal linkage (an anonymous namespace): no copy compiled for one ISA is ever a weak symbol the
// linker could hand to code running on a CPU without it.
//
// V provides: Float, Mask, Int (lane types), Band (what `outside` compares against); kLanes and
// kMaxTileVectors (the widest tile in vectors); zero, set1, broadcast (from memory), load (fp32, or
// bf16 widened), store, fmadd, mul, add, sub, max, exp_nonpositive; band(window), lane_distances(first)
// (lane i holds first + i), outside(distance, j, band) (lanes where key j is hidden: distance - j < 0
// or >= the window), equal(a, b), replace(a, where, b) (b where the mask is set) and
// zero_where(where, a).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/bf16.hpp"
#include "mechanisms/softmax_kv/prefill_blocks.hpp"

#if !defined(ARCH_BENCH_SIMD_TARGET)
#error "define ARCH_BENCH_SIMD_TARGET (the set's target attribute) before including cpu_simd_prefill.hpp"
#endif

namespace arch_bench {
namespace {

using prefill_blocks::kBlock;   // queries per query block = keys per key block
using prefill_blocks::kMaxDim;  // Mechanism::unsupported() rejects wider heads
// 6 rows: AVX2's 6 x 2 accumulators + 2 operands + 1 broadcast = 15 of 16 ymm; AVX-512's
// 6 x 4 accumulators + 4 operands of 32 zmm.
constexpr int kTileRows = 6;

// Runs `tile.template operator()<R>(offset)` over [0, rows) in tiles of kTileRows and one tail.
template <class Tile>
ARCH_BENCH_SIMD_TARGET inline void over_row_tiles(std::int64_t rows, Tile&& tile) {
  std::int64_t i = 0;
  for (; i + kTileRows <= rows; i += kTileRows) tile.template operator()<kTileRows>(i);
  switch (rows - i) {
    case 5: tile.template operator()<5>(i); break;
    case 4: tile.template operator()<4>(i); break;
    case 3: tile.template operator()<3>(i); break;
    case 2: tile.template operator()<2>(i); break;
    case 1: tile.template operator()<1>(i); break;
    default: break;
  }
}

// Calls `body.template operator()<C>()` for C = vectors (1 .. kMaxVectors, at most 4).
template <int kMaxVectors, class Body>
ARCH_BENCH_SIMD_TARGET inline void with_vectors(std::int64_t vectors, Body&& body) {
  static_assert(kMaxVectors >= 1 && kMaxVectors <= 4);
  switch (vectors) {
    case 4: if constexpr (kMaxVectors >= 4) body.template operator()<4>(); break;
    case 3: if constexpr (kMaxVectors >= 3) body.template operator()<3>(); break;
    case 2: if constexpr (kMaxVectors >= 2) body.template operator()<2>(); break;
    case 1: body.template operator()<1>(); break;
    default: break;
  }
}

// st[i][0..C lanes) = sum_c keys[i][c] qt[c][0..C lanes) for R key rows (qt and st have row stride kBlock).
template <class V, int R, int C>
ARCH_BENCH_SIMD_TARGET inline void scores_tile(const float* keys, std::int64_t key_stride, const float* qt,
                                               std::int64_t depth, float* st) {
  typename V::Float acc[R][C];
  for (int i = 0; i < R; ++i) {
    for (int v = 0; v < C; ++v) acc[i][v] = V::zero();
  }
  for (std::int64_t c = 0; c < depth; ++c) {
    typename V::Float b[C];
    for (int v = 0; v < C; ++v) b[v] = V::load(qt + c * kBlock + V::kLanes * v);
    for (int i = 0; i < R; ++i) {
      const typename V::Float a = V::broadcast(keys + i * key_stride + c);
      for (int v = 0; v < C; ++v) acc[i][v] = V::fmadd(a, b[v], acc[i][v]);
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int v = 0; v < C; ++v) V::store(st + i * kBlock + V::kLanes * v, acc[i][v]);
  }
}

// o[i][0..C lanes) = correction[i] o[i][0..C lanes) + sum_j pt[j][i] values[j][0..C lanes) for R query rows.
template <class V, int R, int C>
ARCH_BENCH_SIMD_TARGET inline void values_tile(const float* pt, const float* values, std::int64_t value_stride,
                                               std::int64_t count, const float* correction, float* o,
                                               std::int64_t o_stride) {
  typename V::Float acc[R][C];
  for (int i = 0; i < R; ++i) {
    const typename V::Float scale = V::broadcast(correction + i);
    for (int v = 0; v < C; ++v) acc[i][v] = V::mul(V::load(o + i * o_stride + V::kLanes * v), scale);
  }
  for (std::int64_t j = 0; j < count; ++j) {
    typename V::Float b[C];
    for (int v = 0; v < C; ++v) b[v] = V::load(values + j * value_stride + V::kLanes * v);
    for (int i = 0; i < R; ++i) {
      const typename V::Float a = V::broadcast(pt + j * kBlock + i);
      for (int v = 0; v < C; ++v) acc[i][v] = V::fmadd(a, b[v], acc[i][v]);
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int v = 0; v < C; ++v) V::store(o + i * o_stride + V::kLanes * v, acc[i][v]);
  }
}

// Calls `tile.template operator()<C>(col)` over [0, columns) (a multiple of 16) in tiles of the widest
// C the set has: AVX2 16 columns a tile, AVX-512 up to 64.
template <class V, class Tile>
ARCH_BENCH_SIMD_TARGET inline void over_column_tiles(std::int64_t columns, Tile&& tile) {
  for (std::int64_t col = 0; col < columns; col += V::kLanes * V::kMaxTileVectors) {
    with_vectors<V::kMaxTileVectors>(std::min<std::int64_t>(V::kMaxTileVectors, (columns - col) / V::kLanes),
                                     [&]<int C>() ARCH_BENCH_SIMD_TARGET { tile.template operator()<C>(col); });
  }
}

// S^T for `count` keys and `cols` (a multiple of 16, at most kBlock) queries.
template <class V>
ARCH_BENCH_SIMD_TARGET void scores_block(const float* keys, std::int64_t key_stride, const float* qt,
                                         std::int64_t depth, std::int64_t count, std::int64_t cols, float* st) {
  over_column_tiles<V>(cols, [&]<int C>(std::int64_t col) ARCH_BENCH_SIMD_TARGET {
    over_row_tiles(count, [&]<int R>(std::int64_t i) ARCH_BENCH_SIMD_TARGET {
      scores_tile<V, R, C>(keys + i * key_stride, key_stride, qt + col, depth, st + i * kBlock + col);
    });
  });
}

template <class V>
ARCH_BENCH_SIMD_TARGET void values_block(const float* pt, const float* values, std::int64_t value_stride,
                                         std::int64_t count, std::int64_t rows, std::int64_t width,
                                         const float* correction, float* o) {
  over_column_tiles<V>(width, [&]<int C>(std::int64_t col) ARCH_BENCH_SIMD_TARGET {
    over_row_tiles(rows, [&]<int R>(std::int64_t i) ARCH_BENCH_SIMD_TARGET {
      values_tile<V, R, C>(pt + i, values + col, value_stride, count, correction + i, o + i * width + col, width);
    });
  });
}

// Turns S^T (count key rows, cols queries) into P^T in place and updates each query's running
// max m and sum l; correction[q] = e^(m_old - m_new) rescales that query's accumulator. A masked block
// (prefill_blocks.hpp: the diagonal, or a band's edge) hides key j from query q outside the mask's
// distance range. A query that sees no key yet (a band's first block) keeps m = -inf: its exponents
// are taken against 0 instead, and all of them are masked to 0.
template <class V>
ARCH_BENCH_SIMD_TARGET void softmax_block(float* st, std::int64_t count, std::int64_t cols,
                                          const prefill_blocks::BlockMask& mask, float* m, float* l,
                                          float* correction) {
  const typename V::Float minus_inf = V::set1(-INFINITY);
  const typename V::Band band = V::band(mask.window);
  for (std::int64_t q = 0; q < cols; q += V::kLanes) {
    // Distance from key 0 of the block to each query: key j is at distance - j.
    const typename V::Int distance = V::lane_distances(q + mask.offset);
    auto hidden = [&](std::int64_t j) ARCH_BENCH_SIMD_TARGET { return V::outside(distance, j, band); };
    const typename V::Float old_max = V::load(m + q);
    typename V::Float new_max = old_max;
    for (std::int64_t j = 0; j < count; ++j) {
      typename V::Float s = V::load(st + j * kBlock + q);
      if (mask.masked) s = V::replace(s, hidden(j), minus_inf);
      new_max = V::max(new_max, s);
    }
    const typename V::Float shift = V::replace(new_max, V::equal(new_max, minus_inf), V::zero());
    const typename V::Float scale = V::exp_nonpositive(V::sub(old_max, shift));
    typename V::Float sum = V::zero();
    for (std::int64_t j = 0; j < count; ++j) {
      typename V::Float p = V::exp_nonpositive(V::sub(V::load(st + j * kBlock + q), shift));
      if (mask.masked) p = V::zero_where(hidden(j), p);  // exactly 0, not e^-87
      V::store(st + j * kBlock + q, p);
      sum = V::add(sum, p);
    }
    V::store(l + q, V::fmadd(V::load(l + q), scale, sum));
    V::store(m + q, new_max);
    V::store(correction + q, scale);
  }
}

// Widens `count` rows of `dim` values to fp32 rows of `width` (>= dim) floats, zero-padded.
template <class V, class T>
ARCH_BENCH_SIMD_TARGET void widen_rows(const T* src, std::int64_t count, std::int64_t dim, std::int64_t width,
                                       float* dst) {
  for (std::int64_t j = 0; j < count; ++j) {
    const T* row = src + j * dim;
    float* out = dst + j * width;
    std::int64_t c = 0;
    for (; c + V::kLanes <= dim; c += V::kLanes) V::store(out + c, V::load(row + c));
    for (; c < dim; ++c) out[c] = to_float(row[c]);
    for (; c < width; ++c) out[c] = 0.0f;
  }
}

// The microkernels above on V, as prefill_blocks.hpp's widening_prefill calls them.
template <class V>
struct WideningKernels {
  template <class T>
  static constexpr auto widen = widen_rows<V, T>;
  static constexpr auto scores = scores_block<V>;
  static constexpr auto softmax = softmax_block<V>;
  static constexpr auto values = values_block<V>;
};

}  // namespace
}  // namespace arch_bench
