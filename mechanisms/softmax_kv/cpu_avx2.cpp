// AVX2 + FMA kernels of softmax_kv. Every function that uses AVX2 carries the target attribute
// (not the whole file), so the inline library code this file instantiates keeps the build's
// baseline ISA and the linker can never hand an AVX2 copy to code that runs on another CPU.
//
// Prefill is FlashAttention-2 on the CPU: for each 64-query block, every 64-key block does
//   S^T = K_blk Q_blk^T (register-tiled: 6 keys x 16 queries, 12 ymm accumulators),
//   an online softmax across the key rows of S^T (vectorised across queries, so the running
//   max/sum of 8 queries live in one register),
//   O = diag(correction) O + P V_blk (register-tiled: 6 queries x 16 channels).
// S^T (keys x queries) rather than S is what lets the softmax state vectorise without a
// transpose; bf16 tiles are widened to fp32 once per block, so the microkernels only see fp32.
#include "mechanisms/softmax_kv/cpu_avx2.hpp"

#if defined(ARCH_BENCH_SOFTMAX_AVX2)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>

#include "core/bf16.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/decode_prefetch.hpp"
#include "mechanisms/softmax_kv/prefill_blocks.hpp"

#define ARCH_BENCH_AVX2 __attribute__((target("avx2,fma")))

namespace arch_bench {

namespace {

using prefill_blocks::kBlock;   // queries per query block = keys per key block
using prefill_blocks::kMaxDim;  // Mechanism::unsupported() rejects wider heads
constexpr int kTileRows = 6;           // 6 x 2 accumulators + 2 operands + 1 broadcast = 15 ymm
constexpr std::int64_t kTileCols = 16;

// e^x for x <= 0, the same range reduction and Cephes polynomial as fast_math.hpp's
// exp_nonpositive (relative error < 2e-7), eight lanes at a time.
ARCH_BENCH_AVX2 inline __m256 exp_nonpositive8(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(-87.0f), x);  // max returns its second operand for NaN: NaN stays
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i exponent =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
}

ARCH_BENCH_AVX2 inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
// bf16 -> fp32 is a 16-bit shift into the high half of each lane.
ARCH_BENCH_AVX2 inline __m256 load8(const bf16* p) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}

ARCH_BENCH_AVX2 inline float horizontal_max(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  x = _mm_max_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

ARCH_BENCH_AVX2 inline float horizontal_sum(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

// Lane j of the result is the sum of the lanes of a[j]: eight dot products finished at once.
ARCH_BENCH_AVX2 inline __m256 sum_each(const __m256 a[8]) {
  const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// ---- prefill -------------------------------------------------------------------------------

// st[i][0..16) = sum_c keys[i][c] qt[c][0..16) for R key rows (qt and st have row stride kBlock).
template <int R>
ARCH_BENCH_AVX2 inline void scores_tile(const float* keys, std::int64_t key_stride, const float* qt,
                                        std::int64_t depth, float* st) {
  __m256 acc[R][2];
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (std::int64_t c = 0; c < depth; ++c) {
    const __m256 b0 = _mm256_loadu_ps(qt + c * kBlock);
    const __m256 b1 = _mm256_loadu_ps(qt + c * kBlock + 8);
    for (int i = 0; i < R; ++i) {
      const __m256 a = _mm256_broadcast_ss(keys + i * key_stride + c);
      acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
    }
  }
  for (int i = 0; i < R; ++i) {
    _mm256_storeu_ps(st + i * kBlock, acc[i][0]);
    _mm256_storeu_ps(st + i * kBlock + 8, acc[i][1]);
  }
}

// o[i][0..16) = correction[i] o[i][0..16) + sum_j pt[j][i] values[j][0..16) for R query rows.
template <int R>
ARCH_BENCH_AVX2 inline void values_tile(const float* pt, const float* values, std::int64_t value_stride,
                                        std::int64_t count, const float* correction, float* o,
                                        std::int64_t o_stride) {
  __m256 acc[R][2];
  for (int i = 0; i < R; ++i) {
    const __m256 scale = _mm256_broadcast_ss(correction + i);
    acc[i][0] = _mm256_mul_ps(_mm256_loadu_ps(o + i * o_stride), scale);
    acc[i][1] = _mm256_mul_ps(_mm256_loadu_ps(o + i * o_stride + 8), scale);
  }
  for (std::int64_t j = 0; j < count; ++j) {
    const __m256 b0 = _mm256_loadu_ps(values + j * value_stride);
    const __m256 b1 = _mm256_loadu_ps(values + j * value_stride + 8);
    for (int i = 0; i < R; ++i) {
      const __m256 a = _mm256_broadcast_ss(pt + j * kBlock + i);
      acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
    }
  }
  for (int i = 0; i < R; ++i) {
    _mm256_storeu_ps(o + i * o_stride, acc[i][0]);
    _mm256_storeu_ps(o + i * o_stride + 8, acc[i][1]);
  }
}

// Runs `tile.template operator()<R>(offset)` over [0, rows) in tiles of kTileRows and one tail.
template <class Tile>
ARCH_BENCH_AVX2 inline void over_row_tiles(std::int64_t rows, Tile&& tile) {
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

// S^T for `count` keys and `cols` (a multiple of 16) queries.
ARCH_BENCH_AVX2 void scores_block(const float* keys, std::int64_t key_stride, const float* qt,
                                  std::int64_t depth, std::int64_t count, std::int64_t cols, float* st) {
  for (std::int64_t col = 0; col < cols; col += kTileCols) {
    over_row_tiles(count, [&]<int R>(std::int64_t i) ARCH_BENCH_AVX2 {
      scores_tile<R>(keys + i * key_stride, key_stride, qt + col, depth, st + i * kBlock + col);
    });
  }
}

ARCH_BENCH_AVX2 void values_block(const float* pt, const float* values, std::int64_t value_stride,
                                  std::int64_t count, std::int64_t rows, std::int64_t width,
                                  const float* correction, float* o) {
  for (std::int64_t col = 0; col < width; col += kTileCols) {
    over_row_tiles(rows, [&]<int R>(std::int64_t i) ARCH_BENCH_AVX2 {
      values_tile<R>(pt + i, values + col, value_stride, count, correction + i, o + i * width + col, width);
    });
  }
}

// Turns S^T (count key rows, cols queries) into P^T in place and updates each query's running
// max m and sum l; correction[q] = e^(m_old - m_new) rescales that query's accumulator. A masked block
// (prefill_blocks.hpp: the diagonal, or a band's edge) hides key j from query q outside the mask's
// distance range. A query that sees no key yet (a band's first block) keeps m = -inf: its exponents
// are taken against 0 instead, and all of them are masked to 0.
ARCH_BENCH_AVX2 void softmax_block(float* st, std::int64_t count, std::int64_t cols,
                                   const prefill_blocks::BlockMask& mask, float* m, float* l, float* correction) {
  const __m256 minus_inf = _mm256_set1_ps(-INFINITY);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i reach_minus_one = _mm256_set1_epi32(static_cast<int>(mask.window - 1));
  for (std::int64_t q = 0; q < cols; q += 8) {
    // Distance from key 0 of the block to each query: key j is at distance - j.
    const __m256i distance = _mm256_add_epi32(lanes, _mm256_set1_epi32(static_cast<int>(q + mask.offset)));
    auto hidden = [&](std::int64_t j) ARCH_BENCH_AVX2 {
      const __m256i d = _mm256_sub_epi32(distance, _mm256_set1_epi32(static_cast<int>(j)));
      return _mm256_castsi256_ps(_mm256_or_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), d),
                                                 _mm256_cmpgt_epi32(d, reach_minus_one)));
    };
    const __m256 old_max = _mm256_loadu_ps(m + q);
    __m256 new_max = old_max;
    for (std::int64_t j = 0; j < count; ++j) {
      __m256 s = _mm256_loadu_ps(st + j * kBlock + q);
      if (mask.masked) s = _mm256_blendv_ps(s, minus_inf, hidden(j));
      new_max = _mm256_max_ps(new_max, s);
    }
    const __m256 shift = _mm256_blendv_ps(new_max, _mm256_setzero_ps(), _mm256_cmp_ps(new_max, minus_inf, _CMP_EQ_OQ));
    const __m256 scale = exp_nonpositive8(_mm256_sub_ps(old_max, shift));
    __m256 sum = _mm256_setzero_ps();
    for (std::int64_t j = 0; j < count; ++j) {
      __m256 p = exp_nonpositive8(_mm256_sub_ps(_mm256_loadu_ps(st + j * kBlock + q), shift));
      if (mask.masked) p = _mm256_andnot_ps(hidden(j), p);  // exactly 0, not e^-87
      _mm256_storeu_ps(st + j * kBlock + q, p);
      sum = _mm256_add_ps(sum, p);
    }
    _mm256_storeu_ps(l + q, _mm256_fmadd_ps(_mm256_loadu_ps(l + q), scale, sum));
    _mm256_storeu_ps(m + q, new_max);
    _mm256_storeu_ps(correction + q, scale);
  }
}

// Widens `count` rows of `dim` values to fp32 rows of `width` (>= dim) floats, zero-padded.
template <class T>
ARCH_BENCH_AVX2 void widen_rows(const T* src, std::int64_t count, std::int64_t dim, std::int64_t width,
                                float* dst) {
  for (std::int64_t j = 0; j < count; ++j) {
    const T* row = src + j * dim;
    float* out = dst + j * width;
    std::int64_t c = 0;
    for (; c + 8 <= dim; c += 8) _mm256_storeu_ps(out + c, load8(row + c));
    for (; c < dim; ++c) out[c] = to_float(row[c]);
    for (; c < width; ++c) out[c] = 0.0f;
  }
}

// The microkernels above, as prefill_blocks.hpp's block walk calls them.
struct Avx2Kernels {
  template <class T>
  static constexpr auto widen = widen_rows<T>;
  static constexpr auto scores = scores_block;
  static constexpr auto softmax = softmax_block;
  static constexpr auto values = values_block;
};

}  // namespace

template <class T>
void softmax_prefill_avx2(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, const T* q, const T* k,
                          const T* v, T* out, std::int64_t group, std::int64_t window) {
  prefill_blocks::widening_prefill<Avx2Kernels>(batch_heads, tokens, dim, q, k, v, out, group, window);
}

// ---- decode --------------------------------------------------------------------------------

// Sixteen channels of a cache row as two fp32 vectors. bf16 pairs are split into even and odd
// channels (a mask and a shift of one 32-byte load, half the work of widening 8 at a time), so
// for bf16 the query and the accumulator live in that permuted channel order too.
ARCH_BENCH_AVX2 inline void load16(const float* p, __m256& lo, __m256& hi) {
  lo = _mm256_loadu_ps(p);
  hi = _mm256_loadu_ps(p + 8);
}
ARCH_BENCH_AVX2 inline void load16(const bf16* p, __m256& lo, __m256& hi) {
  const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  lo = _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16));                                // even
  hi = _mm256_castsi256_ps(_mm256_and_si256(pairs, _mm256_set1_epi32(int(0xffff0000u))));  // odd
}

// Index in the layout load16 produces of channel c.
template <class T>
std::int64_t lane_of(std::int64_t c) {
  if constexpr (std::is_same_v<T, float>) {
    return c;
  } else {
    return c / 16 * 16 + (c % 2) * 8 + (c % 16) / 2;
  }
}

// The cache line of channels [c, c + 16) of the row at `row`, asked for kDecodePrefetchRows ahead of
// the loads (decode_prefetch.hpp and cpu_avx512.cpp have the numbers): a bf16 line holds 32
// channels, so only even slices ask. Into L1 or L2 as `Locality` says (L2 on AMD).
template <int Locality, class T>
inline void prefetch16(const T* row, std::int64_t c) {
  if (sizeof(T) == 4 || c % 32 == 0) __builtin_prefetch(row + c, 0, Locality);
}

// acc[0, 16 N) = rescale acc + sum_j p_j values[j][0, 16 N): 2 N accumulators in registers, so the
// FMA chains are 2 N wide (N = 4 hides the 4-cycle FMA latency on two ports).
template <int N, int Locality, class T>
ARCH_BENCH_AVX2 inline void accumulate_values(const T* rows, std::int64_t stride, std::int64_t count,
                                              const float* p, __m256 rescale, float* acc) {
  __m256 a[2 * N];
  for (int i = 0; i < 2 * N; ++i) a[i] = _mm256_mul_ps(_mm256_loadu_ps(acc + 8 * i), rescale);
  for (std::int64_t j = 0; j < count; ++j) {
    const __m256 w = _mm256_broadcast_ss(p + j);
    for (int i = 0; i < N; ++i) {
      __m256 lo, hi;
      prefetch16<Locality>(rows + (j + kDecodePrefetchRows<T>) * stride, 16 * i);
      load16(rows + j * stride + 16 * i, lo, hi);
      a[2 * i] = _mm256_fmadd_ps(w, lo, a[2 * i]);
      a[2 * i + 1] = _mm256_fmadd_ps(w, hi, a[2 * i + 1]);
    }
  }
  for (int i = 0; i < 2 * N; ++i) _mm256_storeu_ps(acc + 8 * i, a[i]);
}

template <int Locality, class T>
ARCH_BENCH_AVX2 void decode_split(const float* queries, std::int64_t query_count, const T* keys, const T* values,
                                  std::int64_t begin, std::int64_t end, std::int64_t dim, float* partials,
                                  std::int64_t partial_stride) {
  alignas(32) float p[kBlock];
  alignas(32) float q_all[kDecodeGroupSlice][kMaxDim];
  alignas(32) float acc_all[kDecodeGroupSlice][kMaxDim];
  float m_all[kDecodeGroupSlice], l_all[kDecodeGroupSlice];
  for (std::int64_t g = 0; g < query_count; ++g) {
    for (std::int64_t c = 0; c < dim; ++c) q_all[g][lane_of<T>(c)] = queries[g * dim + c];
    std::fill_n(acc_all[g], dim, 0.0f);
    m_all[g] = -INFINITY;
    l_all[g] = 0.0f;
  }
  for (std::int64_t block = begin; block < end; block += kBlock) {
    // The group's queries one after another over the same block: after the first, its rows come from L1.
    for (std::int64_t query = 0; query < query_count; ++query) {
      const float* q = q_all[query];
      float* acc = acc_all[query];
      float& m = m_all[query];
      float& l = l_all[query];
      const std::int64_t count = std::min(kBlock, end - block);
      const std::int64_t groups = (count + 7) / 8;
      // Scores of eight keys at a time, eight independent FMA chains; past `end` the last row is
      // read again (never beyond the cache) and its score masked below.
      for (std::int64_t g = 0; g < groups; ++g) {
        const T* rows[8];
        for (int j = 0; j < 8; ++j) rows[j] = keys + std::min(block + g * 8 + j, end - 1) * dim;
        __m256 dot[8];
        for (int j = 0; j < 8; ++j) dot[j] = _mm256_setzero_ps();
        for (std::int64_t c = 0; c < dim; c += 16) {
          const __m256 q_lo = _mm256_load_ps(q + c), q_hi = _mm256_load_ps(q + c + 8);
          for (int j = 0; j < 8; ++j) {
            __m256 lo, hi;
            prefetch16<Locality>(rows[j] + kDecodePrefetchRows<T> * dim, c);
            load16(rows[j] + c, lo, hi);
            dot[j] = _mm256_fmadd_ps(lo, q_lo, dot[j]);
            dot[j] = _mm256_fmadd_ps(hi, q_hi, dot[j]);
          }
        }
        _mm256_store_ps(p + g * 8, sum_each(dot));
      }
      for (std::int64_t j = count; j < groups * 8; ++j) p[j] = -INFINITY;
      __m256 block_max = _mm256_set1_ps(-INFINITY);
      for (std::int64_t g = 0; g < groups; ++g) block_max = _mm256_max_ps(block_max, _mm256_load_ps(p + g * 8));
      const float new_max = std::max(m, horizontal_max(block_max));
      const __m256 shift = _mm256_set1_ps(new_max);
      __m256 sum = _mm256_setzero_ps();
      for (std::int64_t g = 0; g < groups; ++g) {
        const __m256 e = exp_nonpositive8(_mm256_sub_ps(_mm256_load_ps(p + g * 8), shift));
        _mm256_store_ps(p + g * 8, e);
        sum = _mm256_add_ps(sum, e);
      }
      float block_sum = horizontal_sum(sum);
      for (std::int64_t j = count; j < groups * 8; ++j) block_sum -= p[j];  // the masked lanes' e^-87
      const float correction = _mm256_cvtss_f32(exp_nonpositive8(_mm256_set1_ps(m - new_max)));
      l = l * correction + block_sum;
      m = new_max;
      const __m256 rescale = _mm256_set1_ps(correction);
      const T* rows = values + block * dim;
      std::int64_t c = 0;
      for (; c + 64 <= dim; c += 64) accumulate_values<4, Locality>(rows + c, dim, count, p, rescale, acc + c);
      switch ((dim - c) / 16) {
        case 3: accumulate_values<3, Locality>(rows + c, dim, count, p, rescale, acc + c); break;
        case 2: accumulate_values<2, Locality>(rows + c, dim, count, p, rescale, acc + c); break;
        case 1: accumulate_values<1, Locality>(rows + c, dim, count, p, rescale, acc + c); break;
        default: break;
      }
    }
  }
  for (std::int64_t g = 0; g < query_count; ++g) {
    float* partial = partials + g * partial_stride;
    partial[0] = m_all[g];
    partial[1] = l_all[g];
    for (std::int64_t c = 0; c < dim; ++c) partial[2 + c] = acc_all[g][lane_of<T>(c)];
  }
}

template <class T>
void softmax_decode_split_avx2(const float* queries, std::int64_t count, const T* keys, const T* values,
                               std::int64_t begin, std::int64_t end, std::int64_t dim, float* partials,
                               std::int64_t partial_stride) {
  if (decode_prefetches_into_l2()) {
    decode_split<kPrefetchIntoL2>(queries, count, keys, values, begin, end, dim, partials, partial_stride);
  } else {
    decode_split<kPrefetchIntoL1>(queries, count, keys, values, begin, end, dim, partials, partial_stride);
  }
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                   \
  template void softmax_prefill_avx2<T>(std::int64_t, std::int64_t, std::int64_t, const T*, const T*, \
                                        const T*, T*, std::int64_t, std::int64_t);                  \
  template void softmax_decode_split_avx2<T>(const float*, std::int64_t, const T*, const T*,         \
                                             std::int64_t, std::int64_t, std::int64_t, float*, std::int64_t);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
#endif  // ARCH_BENCH_SOFTMAX_AVX2
