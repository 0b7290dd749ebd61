// Causal prefill of bf16 q/k/v on AVX-512 BF16 dot products (vdpbf16ps: one instruction takes
// 16 lanes x 2 bf16 products into fp32, twice the multiply-adds of an fp32 FMA). The blocks and
// the online softmax are cpu_avx512.cpp's; what changes is the operands' layout:
//   S^T = K Q^T   keys read in place (a key's channel pair is one 32-bit broadcast), the query block
//                 stored as channel pairs [c/2][query]; the scores come out unscaled and the
//                 softmax applies 1/sqrt(d), so q and k reach the products exactly as stored
//   O += P V      P rounded to bf16 (as FlashAttention does on GPUs) and stored as key pairs
//                 [j/2][query]; V as key pairs [j/2][channel]
// The only rounding beyond the fp32 kernels' is P's (2^-9 relative, unbiased), well inside the
// bf16 tolerance; fp32 storage never comes here.
#include "mechanisms/softmax_kv/cpu_avx512.hpp"

#if defined(ARCH_BENCH_SOFTMAX_AVX512)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/bf16.hpp"
#include "mechanisms/softmax_kv/cpu_avx512_kernels.hpp"

#define ARCH_BENCH_AVX512_BF16 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma")))

namespace arch_bench {

namespace {

constexpr std::int64_t kPairs = kBlock / 2;

// The 32-bit word holding bf16 elements p[0] (low half) and p[1] (high half).
inline std::uint32_t pair_at(const bf16* p) {
  std::uint32_t word;
  std::memcpy(&word, p, sizeof(word));
  return word;
}

// [a0, b0, a1, b1, ..., a15, b15] from a = lo[0..15], b = lo[16..31] of `halves`.
ARCH_BENCH_AVX512_BF16 inline __m512i interleave_halves(__m512i halves) {
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                         6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(order, halves);
}

// st[i][0..16 C) = sum_c keys[i][c] q[0..16 C)[c] over `pairs` channel pairs, for R key rows.
template <int R, int C>
ARCH_BENCH_AVX512_BF16 inline void scores_tile(const bf16* keys, std::int64_t key_stride, const std::uint32_t* qp,
                                               std::int64_t pairs, float* st) {
  __m512 acc[R][C];
  for (int i = 0; i < R; ++i) {
    for (int v = 0; v < C; ++v) acc[i][v] = _mm512_setzero_ps();
  }
  for (std::int64_t c = 0; c < pairs; ++c) {
    __m512bh b[C];
    for (int v = 0; v < C; ++v) b[v] = (__m512bh)_mm512_loadu_si512(qp + c * kBlock + kLanes * v);
    for (int i = 0; i < R; ++i) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair_at(keys + i * key_stride + 2 * c)));
      for (int v = 0; v < C; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], a, b[v]);
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int v = 0; v < C; ++v) _mm512_storeu_ps(st + i * kBlock + kLanes * v, acc[i][v]);
  }
}

// o[i][0..16 C) = correction[i] o[i][0..16 C) + sum_j p[i][j] v[j][0..16 C) over key pairs.
template <int R, int C>
ARCH_BENCH_AVX512_BF16 inline void values_tile(const std::uint32_t* pp, const std::uint32_t* vp,
                                               std::int64_t vp_stride, std::int64_t pairs, const float* correction,
                                               float* o, std::int64_t o_stride) {
  __m512 acc[R][C];
  for (int i = 0; i < R; ++i) {
    const __m512 scale = _mm512_set1_ps(correction[i]);
    for (int v = 0; v < C; ++v) acc[i][v] = _mm512_mul_ps(_mm512_loadu_ps(o + i * o_stride + kLanes * v), scale);
  }
  for (std::int64_t j = 0; j < pairs; ++j) {
    __m512bh b[C];
    for (int v = 0; v < C; ++v) b[v] = (__m512bh)_mm512_loadu_si512(vp + j * vp_stride + kLanes * v);
    for (int i = 0; i < R; ++i) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(pp[j * kBlock + i]));
      for (int v = 0; v < C; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], a, b[v]);
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int v = 0; v < C; ++v) _mm512_storeu_ps(o + i * o_stride + kLanes * v, acc[i][v]);
  }
}

// Turns unscaled S^T (count key rows, cols queries) into bf16 P pairs [j/2][query] and updates each
// query's running max m (in scaled units) and sum l; correction[q] = e^(m_old - m_new). Masking (and a
// query that sees no key yet) as in cpu_avx512.cpp; an odd count's missing partner row is 0.
ARCH_BENCH_AVX512_BF16 void softmax_block(const float* st, std::int64_t count, std::int64_t cols,
                                          const prefill_blocks::BlockMask& mask, float scale, std::uint32_t* pp,
                                          float* m, float* l, float* correction) {
  const __m512 minus_inf = _mm512_set1_ps(-INFINITY);
  const __m512 scale16 = _mm512_set1_ps(scale);
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i reach = _mm512_set1_epi32(static_cast<int>(mask.window));
  for (std::int64_t q = 0; q < cols; q += kLanes) {
    const __m512i distance = _mm512_add_epi32(lanes, _mm512_set1_epi32(static_cast<int>(q + mask.offset)));
    auto visible = [&](std::int64_t j) ARCH_BENCH_AVX512_BF16 {
      if (!mask.masked) return static_cast<__mmask16>(0xffff);
      const __m512i d = _mm512_sub_epi32(distance, _mm512_set1_epi32(static_cast<int>(j)));
      return static_cast<__mmask16>(~(_mm512_cmplt_epi32_mask(d, _mm512_setzero_si512()) |
                                      _mm512_cmpge_epi32_mask(d, reach)));
    };
    const __m512 old_max = _mm512_loadu_ps(m + q);
    __m512 block_max = minus_inf;
    for (std::int64_t j = 0; j < count; ++j) {
      block_max = _mm512_mask_max_ps(block_max, visible(j), block_max, _mm512_loadu_ps(st + j * kBlock + q));
    }
    const __m512 new_max = _mm512_max_ps(old_max, _mm512_mul_ps(block_max, scale16));
    const __m512 shift = _mm512_mask_mov_ps(new_max, _mm512_cmp_ps_mask(new_max, minus_inf, _CMP_EQ_OQ),
                                            _mm512_setzero_ps());
    const __m512 rescale = exp_nonpositive16(_mm512_sub_ps(old_max, shift));
    auto weight = [&](std::int64_t j) ARCH_BENCH_AVX512_BF16 {
      if (j >= count) return _mm512_setzero_ps();
      const __m512 p = exp_nonpositive16(_mm512_fmsub_ps(_mm512_loadu_ps(st + j * kBlock + q), scale16, shift));
      return _mm512_maskz_mov_ps(visible(j), p);  // exactly 0, not e^-87
    };
    __m512 sum = _mm512_setzero_ps();
    for (std::int64_t j = 0; j < count; j += 2) {
      const __m512 p0 = weight(j), p1 = weight(j + 1);
      const __m512i halves = (__m512i)_mm512_cvtne2ps_pbh(p1, p0);  // [p0 as bf16, p1 as bf16]
      _mm512_storeu_si512(pp + j / 2 * kBlock + q, interleave_halves(halves));
      sum = _mm512_add_ps(sum, _mm512_add_ps(p0, p1));
    }
    _mm512_storeu_ps(l + q, _mm512_fmadd_ps(_mm512_loadu_ps(l + q), rescale, sum));
    _mm512_storeu_ps(m + q, new_max);
    _mm512_storeu_ps(correction + q, rescale);
  }
}

// Rows 2j and 2j + 1 of `count` value rows as channel pairs vp[j][0..width), zero-padded past dim
// and past the last row.
ARCH_BENCH_AVX512_BF16 void pair_value_rows(const bf16* v, std::int64_t count, std::int64_t dim, std::int64_t width,
                                            std::uint32_t* vp) {
  for (std::int64_t j = 0; j < count; j += 2) {
    const bf16* even = v + j * dim;
    const bf16* odd = even + dim;
    const bool has_odd = j + 1 < count;
    for (std::int64_t c = 0; c < width; c += kLanes) {
      const __mmask16 in_row = static_cast<__mmask16>(dim - c >= kLanes ? 0xffff : (1u << (dim - c)) - 1u);
      const __m256i lo = _mm256_maskz_loadu_epi16(in_row, even + c);
      const __m256i hi = has_odd ? _mm256_maskz_loadu_epi16(in_row, odd + c) : _mm256_setzero_si256();
      const __m512i halves = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
      _mm512_storeu_si512(vp + j / 2 * width + c, interleave_halves(halves));
    }
  }
}

struct PrefillScratch {
  alignas(64) std::uint32_t qp[kMaxDim / 2 * kBlock];  // the query block as channel pairs
  alignas(64) std::uint32_t vp[kPairs * kMaxDim];      // one value block as key pairs
  alignas(64) std::uint32_t pp[kPairs * kBlock];       // P as key pairs
  alignas(64) float st[kBlock * kBlock];               // unscaled S^T
  alignas(64) float o[kBlock * kMaxDim];               // unnormalised output rows
  alignas(64) float m[kBlock], l[kBlock], correction[kBlock];
};

ARCH_BENCH_AVX512_BF16 void scores_block(const bf16* keys, std::int64_t key_stride, const std::uint32_t* qp,
                                         std::int64_t pairs, std::int64_t count, std::int64_t cols, float* st) {
  with_vectors<kMaxTileVectors>(cols / kLanes, [&]<int C>() ARCH_BENCH_AVX512_BF16 {
    over_row_tiles(count, [&]<int R>(std::int64_t i) ARCH_BENCH_AVX512_BF16 {
      scores_tile<R, C>(keys + i * key_stride, key_stride, qp, pairs, st + i * kBlock);
    });
  });
}

ARCH_BENCH_AVX512_BF16 void values_block(const std::uint32_t* pp, const std::uint32_t* vp, std::int64_t pairs,
                                         std::int64_t rows, std::int64_t width, const float* correction, float* o) {
  for (std::int64_t col = 0; col < width; col += kLanes * kMaxTileVectors) {
    const std::int64_t vectors = std::min<std::int64_t>(kMaxTileVectors, (width - col) / kLanes);
    with_vectors<kMaxTileVectors>(vectors, [&]<int C>() ARCH_BENCH_AVX512_BF16 {
      over_row_tiles(rows, [&]<int R>(std::int64_t i) ARCH_BENCH_AVX512_BF16 {
        values_tile<R, C>(pp + i, vp + col, width, pairs, correction + i, o + i * width + col, width);
      });
    });
  }
}

ARCH_BENCH_AVX512_BF16 void prefill_query_block(const bf16* q, const bf16* k, const bf16* v, bf16* out,
                                                std::int64_t tokens, std::int64_t dim, std::int64_t q_begin,
                                                std::int64_t window, PrefillScratch& s) {
  const std::int64_t rows = std::min(kBlock, tokens - q_begin);
  const std::int64_t cols = (rows + kLanes - 1) / kLanes * kLanes;
  const std::int64_t width = (dim + kLanes - 1) / kLanes * kLanes;
  const std::int64_t channel_pairs = dim / 2;
  for (std::int64_t c = 0; c < channel_pairs; ++c) {
    for (std::int64_t i = 0; i < cols; ++i) s.qp[c * kBlock + i] = i < rows ? pair_at(q + (q_begin + i) * dim + 2 * c) : 0;
  }
  std::fill_n(s.m, kBlock, -INFINITY);
  std::fill_n(s.l, kBlock, 0.0f);
  std::fill_n(s.o, rows * width, 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  for (std::int64_t block = prefill_blocks::first_key_block(q_begin, window); block <= q_begin; block += kBlock) {
    const std::int64_t count = std::min(kBlock, tokens - block);
    pair_value_rows(v + block * dim, count, dim, width, s.vp);
    scores_block(k + block * dim, dim, s.qp, channel_pairs, count, cols, s.st);
    softmax_block(s.st, count, cols, prefill_blocks::block_mask(q_begin, rows, block, window), scale, s.pp, s.m,
                  s.l, s.correction);
    values_block(s.pp, s.vp, (count + 1) / 2, rows, width, s.correction, s.o);
  }
  for (std::int64_t i = 0; i < rows; ++i) {
    const float inverse = 1.0f / s.l[i];
    bf16* row = out + (q_begin + i) * dim;
    for (std::int64_t c = 0; c < dim; ++c) row[c] = bf16(s.o[i * width + c] * inverse);
  }
}

}  // namespace

void softmax_prefill_avx512_bf16_dot(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim,
                                     const bf16* q, const bf16* k, const bf16* v, bf16* out, std::int64_t group,
                                     std::int64_t window) {
  prefill_blocks::for_each_query_block<PrefillScratch>(
      batch_heads, tokens, dim, group,
      [&](prefill_blocks::HeadOffsets at, std::int64_t q_begin, PrefillScratch& scratch) {
        prefill_query_block(q + at.query, k + at.kv, v + at.kv, out + at.query, tokens, dim, q_begin, window,
                            scratch);
      });
}

}  // namespace arch_bench
#endif  // ARCH_BENCH_SOFTMAX_AVX512
