// AVX-512 kernels of softmax_kv: the AVX2 set's algorithms (cpu_avx2.cpp) on 16-lane registers,
// with tiles sized for 32 of them. As there, every function that uses AVX-512 carries the target
// attribute, not the whole file, so no inline library code is compiled for a CPU that may lack it.
//
// Prefill is cpu_simd_prefill.hpp's microkernels on 16-lane zmm vectors (Avx512Vector below): a score
// tile is 6 keys x 64 queries, 24 zmm accumulators and 4 query vectors (6 broadcasts + 4 loads per 24
// FMAs); the value tile is 6 queries x 64 channels, the same shape.
// Decode splits score sixteen keys at once (sixteen FMA chains, one transpose-and-add tree).
#include "mechanisms/softmax_kv/cpu_avx512.hpp"

#if defined(ARCH_BENCH_SOFTMAX_AVX512)
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>

#include "core/bf16.hpp"
#include "mechanisms/softmax_kv/prefill_blocks.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/cpu_avx512_kernels.hpp"
#include "mechanisms/softmax_kv/cpu_decode_split.hpp"
#include "mechanisms/softmax_kv/decode_prefetch.hpp"

namespace arch_bench {

namespace {

ARCH_BENCH_AVX512 inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
// bf16 -> fp32 is a 16-bit shift into the high half of each lane.
ARCH_BENCH_AVX512 inline __m512 load16(const bf16* p) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

// Lane j of the result is the sum of the lanes of a[j]: sixteen dot products finished by one tree
// of 15 adds. Each level halves the vectors: pairs of keys share 128-bit lanes (unpack), then
// quadruples (shuffle), then the four 128-bit lanes of partial sums are folded (shuffle_f32x4).
ARCH_BENCH_AVX512 inline __m512 sum_each16(const __m512 a[16]) {
  __m512 pairs[8];  // per 128-bit lane: [key 2k, key 2k+1, key 2k, key 2k+1] partials
  for (int k = 0; k < 8; ++k) {
    pairs[k] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * k], a[2 * k + 1]), _mm512_unpackhi_ps(a[2 * k], a[2 * k + 1]));
  }
  __m512 quads[4];  // per 128-bit lane: keys 4m .. 4m + 3, that lane's partials
  for (int m = 0; m < 4; ++m) {
    quads[m] = _mm512_add_ps(_mm512_shuffle_ps(pairs[2 * m], pairs[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(pairs[2 * m], pairs[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // Two 128-bit lanes of partials folded: (q0: 0+1, q0: 2+3, q1: 0+1, q1: 2+3), then all four.
  const __m512 folded01 = _mm512_add_ps(_mm512_shuffle_f32x4(quads[0], quads[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm512_shuffle_f32x4(quads[0], quads[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 folded23 = _mm512_add_ps(_mm512_shuffle_f32x4(quads[2], quads[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm512_shuffle_f32x4(quads[2], quads[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(folded01, folded23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(folded01, folded23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// ---- prefill -------------------------------------------------------------------------------

// cpu_simd_prefill.hpp's vector on AVX-512: sixteen fp32 lanes a zmm register, masks in k registers.
struct Avx512Vector {
  using Float = __m512;
  using Mask = __mmask16;
  using Int = __m512i;
  using Band = __m512i;  // the window
  static constexpr int kLanes = arch_bench::kLanes;
  static constexpr int kMaxTileVectors = arch_bench::kMaxTileVectors;

  ARCH_BENCH_AVX512 static Float zero() { return _mm512_setzero_ps(); }
  ARCH_BENCH_AVX512 static Float set1(float x) { return _mm512_set1_ps(x); }
  ARCH_BENCH_AVX512 static Float broadcast(const float* p) { return _mm512_set1_ps(*p); }
  ARCH_BENCH_AVX512 static Float load(const float* p) { return load16(p); }
  ARCH_BENCH_AVX512 static Float load(const bf16* p) { return load16(p); }
  ARCH_BENCH_AVX512 static void store(float* p, Float v) { _mm512_storeu_ps(p, v); }
  ARCH_BENCH_AVX512 static Float fmadd(Float a, Float b, Float c) { return _mm512_fmadd_ps(a, b, c); }
  ARCH_BENCH_AVX512 static Float mul(Float a, Float b) { return _mm512_mul_ps(a, b); }
  ARCH_BENCH_AVX512 static Float add(Float a, Float b) { return _mm512_add_ps(a, b); }
  ARCH_BENCH_AVX512 static Float sub(Float a, Float b) { return _mm512_sub_ps(a, b); }
  ARCH_BENCH_AVX512 static Float max(Float a, Float b) { return _mm512_max_ps(a, b); }
  ARCH_BENCH_AVX512 static Float exp_nonpositive(Float x) { return exp_nonpositive16(x); }

  ARCH_BENCH_AVX512 static Band band(std::int64_t window) { return _mm512_set1_epi32(static_cast<int>(window)); }
  ARCH_BENCH_AVX512 static Int lane_distances(std::int64_t first) {
    return _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32(static_cast<int>(first)));
  }
  ARCH_BENCH_AVX512 static Mask outside(Int distance, std::int64_t j, Band band) {
    const __m512i d = _mm512_sub_epi32(distance, _mm512_set1_epi32(static_cast<int>(j)));
    return static_cast<Mask>(_mm512_cmplt_epi32_mask(d, _mm512_setzero_si512()) |
                             _mm512_cmpge_epi32_mask(d, band));
  }
  ARCH_BENCH_AVX512 static Mask equal(Float a, Float b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  ARCH_BENCH_AVX512 static Float replace(Float a, Mask where, Float b) { return _mm512_mask_mov_ps(a, where, b); }
  ARCH_BENCH_AVX512 static Float zero_where(Mask where, Float a) {
    return _mm512_maskz_mov_ps(static_cast<Mask>(~where), a);
  }
};

}  // namespace

template <class T>
void softmax_prefill_avx512(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, const T* q, const T* k,
                            const T* v, T* out, std::int64_t group, std::int64_t window) {
  prefill_blocks::widening_prefill<WideningKernels<Avx512Vector>>(batch_heads, tokens, dim, q, k, v, out, group,
                                                                  window);
}

// ---- decode --------------------------------------------------------------------------------

namespace {

// Thirty-two channels of a cache row as two fp32 vectors. bf16 pairs are split into even and odd
// channels (a shift and a mask of one 64-byte load), so for bf16 the query and the accumulator live
// in that permuted channel order too.
ARCH_BENCH_AVX512 inline void load32(const float* p, __m512& lo, __m512& hi) {
  lo = _mm512_loadu_ps(p);
  hi = _mm512_loadu_ps(p + kLanes);
}
ARCH_BENCH_AVX512 inline void load32(const bf16* p, __m512& lo, __m512& hi) {
  const __m512i pairs = _mm512_loadu_si512(p);
  lo = _mm512_castsi512_ps(_mm512_slli_epi32(pairs, 16));                                   // even
  hi = _mm512_castsi512_ps(_mm512_and_si512(pairs, _mm512_set1_epi32(int(0xffff0000u))));  // odd
}

// Index in the layout load32 produces of channel c.
template <class T>
std::int64_t lane_of(std::int64_t c) {
  if constexpr (std::is_same_v<T, float>) {
    return c;
  } else {
    return c / 32 * 32 + (c % 2) * kLanes + (c % 32) / 2;
  }
}

// Requests the cache lines of the 32 channels at `p` (one line of bf16, two of fp32). The decode
// loops ask for the row kDecodePrefetchRows ahead of the one they load (decode_prefetch.hpp: a block
// of 64 for bf16, 16 for fp32): the hardware prefetcher alone left a cold bf16 step at L = 8192
// (8 heads x 64) short of DRAM bandwidth (1.16 ms against 0.85 ms with these, alternated in one
// process on Sapphire Rapids). Spread over the loads, not
// issued as one burst per block: the burst filled the fill buffers and made the hot step 20-30%
// slower. A prefetch never faults, so running past the split's end needs no check. Into L1 or L2 as
// `Locality` says (decode_prefetch.hpp: L2 on AMD, where it doubled the cold step's rate).
template <int Locality, class T>
inline void prefetch32(const T* p) {
  __builtin_prefetch(p, 0, Locality);
  if constexpr (sizeof(T) == 4) __builtin_prefetch(p + 16, 0, Locality);
}

// acc[0, 32 N) = rescale acc + sum_j p_j values[j][0, 32 N). Even and odd keys go to two sets of
// 2 N accumulators, so even at 64 channels (N = 2) eight FMA chains hide the FMA latency.
template <int N, int Locality, class T>
ARCH_BENCH_AVX512 inline void accumulate_values(const T* rows, std::int64_t stride, std::int64_t count,
                                                const float* p, __m512 rescale, float* acc) {
  __m512 even[2 * N], odd[2 * N];
  for (int i = 0; i < 2 * N; ++i) {
    even[i] = _mm512_mul_ps(_mm512_loadu_ps(acc + kLanes * i), rescale);
    odd[i] = _mm512_setzero_ps();
  }
  std::int64_t j = 0;
  for (; j + 2 <= count; j += 2) {
    const __m512 w0 = _mm512_set1_ps(p[j]), w1 = _mm512_set1_ps(p[j + 1]);
    for (int i = 0; i < N; ++i) {
      __m512 lo, hi;
      prefetch32<Locality>(rows + (j + kDecodePrefetchRows<T>) * stride + 32 * i);
      prefetch32<Locality>(rows + (j + 1 + kDecodePrefetchRows<T>) * stride + 32 * i);
      load32(rows + j * stride + 32 * i, lo, hi);
      even[2 * i] = _mm512_fmadd_ps(w0, lo, even[2 * i]);
      even[2 * i + 1] = _mm512_fmadd_ps(w0, hi, even[2 * i + 1]);
      load32(rows + (j + 1) * stride + 32 * i, lo, hi);
      odd[2 * i] = _mm512_fmadd_ps(w1, lo, odd[2 * i]);
      odd[2 * i + 1] = _mm512_fmadd_ps(w1, hi, odd[2 * i + 1]);
    }
  }
  if (j < count) {
    const __m512 w0 = _mm512_set1_ps(p[j]);
    for (int i = 0; i < N; ++i) {
      __m512 lo, hi;
      load32(rows + j * stride + 32 * i, lo, hi);
      even[2 * i] = _mm512_fmadd_ps(w0, lo, even[2 * i]);
      even[2 * i + 1] = _mm512_fmadd_ps(w0, hi, even[2 * i + 1]);
    }
  }
  for (int i = 0; i < 2 * N; ++i) _mm512_storeu_ps(acc + kLanes * i, _mm512_add_ps(even[i], odd[i]));
}

// Scores of one query against keys [block, block + count): sixteen keys at a time, sixteen independent
// FMA chains; past `end` the last row is read again (never beyond the cache) and its score masked later.
template <int Locality, class T>
ARCH_BENCH_AVX512 inline void scores_of_one(const float* q, const T* keys, std::int64_t block, std::int64_t end,
                                            std::int64_t count, std::int64_t dim, float* p) {
  const std::int64_t groups = (count + kLanes - 1) / kLanes;
  for (std::int64_t g = 0; g < groups; ++g) {
    const T* rows[kLanes];
    for (int j = 0; j < kLanes; ++j) rows[j] = keys + std::min(block + g * kLanes + j, end - 1) * dim;
    __m512 dot[kLanes];
    for (int j = 0; j < kLanes; ++j) dot[j] = _mm512_setzero_ps();
    for (std::int64_t c = 0; c < dim; c += 32) {
      const __m512 q_lo = _mm512_load_ps(q + c), q_hi = _mm512_load_ps(q + c + kLanes);
      for (int j = 0; j < kLanes; ++j) {
        __m512 lo, hi;
        prefetch32<Locality>(rows[j] + c + kDecodePrefetchRows<T> * dim);
        load32(rows[j] + c, lo, hi);
        dot[j] = _mm512_fmadd_ps(lo, q_lo, dot[j]);
        dot[j] = _mm512_fmadd_ps(hi, q_hi, dot[j]);
      }
    }
    _mm512_store_ps(p + g * kLanes, sum_each16(dot));
  }
}

// Scores of two queries of a group against the same keys, eight keys at a time: each key row is loaded
// (and, for bf16, widened) once for both, sixteen FMA chains, and one sum_each16 finishes the sixteen
// dot products (lanes 0-7 the first query's, 8-15 the second's). Every (key, query) chain and its sum
// are the one-query kernel's, so the scores are the same to the bit.
template <int Locality, class T>
ARCH_BENCH_AVX512 inline void scores_of_two(const float* q0, const float* q1, const T* keys, std::int64_t block,
                                            std::int64_t end, std::int64_t count, std::int64_t dim, float* p0,
                                            float* p1) {
  constexpr int kKeys = kLanes / 2;
  const std::int64_t groups = (count + kLanes - 1) / kLanes * 2;  // eights covering the sixteens the softmax reads
  for (std::int64_t g = 0; g < groups; ++g) {
    const T* rows[kKeys];
    for (int j = 0; j < kKeys; ++j) rows[j] = keys + std::min(block + g * kKeys + j, end - 1) * dim;
    __m512 dot[kLanes];
    for (int j = 0; j < kLanes; ++j) dot[j] = _mm512_setzero_ps();
    for (std::int64_t c = 0; c < dim; c += 32) {
      const __m512 a_lo = _mm512_load_ps(q0 + c), a_hi = _mm512_load_ps(q0 + c + kLanes);
      const __m512 b_lo = _mm512_load_ps(q1 + c), b_hi = _mm512_load_ps(q1 + c + kLanes);
      for (int j = 0; j < kKeys; ++j) {
        __m512 lo, hi;
        prefetch32<Locality>(rows[j] + c + kDecodePrefetchRows<T> * dim);
        load32(rows[j] + c, lo, hi);
        dot[j] = _mm512_fmadd_ps(lo, a_lo, dot[j]);
        dot[j] = _mm512_fmadd_ps(hi, a_hi, dot[j]);
        dot[kKeys + j] = _mm512_fmadd_ps(lo, b_lo, dot[kKeys + j]);
        dot[kKeys + j] = _mm512_fmadd_ps(hi, b_hi, dot[kKeys + j]);
      }
    }
    const __m512 sums = sum_each16(dot);
    _mm256_store_ps(p0 + g * kKeys, _mm512_castps512_ps256(sums));
    _mm256_store_ps(p1 + g * kKeys, _mm512_extractf32x8_ps(sums, 1));
  }
}

// Turns one query's block of scores p (count valid, in sixteens) into weights e^(s - m_new) in place and
// updates its running max m and sum l; returns e^(m_old - m_new), the rescale of its accumulator.
ARCH_BENCH_AVX512 inline __m512 softmax_of_block(float* p, std::int64_t count, float& m, float& l) {
  const std::int64_t groups = (count + kLanes - 1) / kLanes;
  const std::int64_t tail = count - (groups - 1) * kLanes;  // keys of the last group in range
  const __mmask16 valid = static_cast<__mmask16>((1u << tail) - 1u);
  float* last = p + (groups - 1) * kLanes;
  _mm512_store_ps(last, _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), valid, _mm512_load_ps(last)));
  __m512 block_max = _mm512_set1_ps(-INFINITY);
  for (std::int64_t g = 0; g < groups; ++g) block_max = _mm512_max_ps(block_max, _mm512_load_ps(p + g * kLanes));
  const float new_max = std::max(m, _mm512_reduce_max_ps(block_max));
  const __m512 shift = _mm512_set1_ps(new_max);
  __m512 sum = _mm512_setzero_ps();
  for (std::int64_t g = 0; g < groups; ++g) {
    __m512 e = exp_nonpositive16(_mm512_sub_ps(_mm512_load_ps(p + g * kLanes), shift));
    if (g == groups - 1) e = _mm512_maskz_mov_ps(valid, e);  // exactly 0, not e^-87
    _mm512_store_ps(p + g * kLanes, e);
    sum = _mm512_add_ps(sum, e);
  }
  const float correction = _mm512_cvtss_f32(exp_nonpositive16(_mm512_set1_ps(m - new_max)));
  l = l * correction + _mm512_reduce_add_ps(sum);
  m = new_max;
  return _mm512_set1_ps(correction);
}

// accumulate_values for two queries sharing each value row's loads: acc0/acc1[0, 32 N) = rescale
// acc + sum_j p_j values[j], each query's even and odd keys in their own accumulators as in the
// one-query kernel (the same sums to the bit). N <= 2: 16 accumulators.
template <int N, int Locality, class T>
ARCH_BENCH_AVX512 inline void accumulate_values_of_two(const T* rows, std::int64_t stride, std::int64_t count,
                                                       const float* p0, const float* p1, __m512 rescale0,
                                                       __m512 rescale1, float* acc0, float* acc1) {
  __m512 even0[2 * N], odd0[2 * N], even1[2 * N], odd1[2 * N];
  for (int i = 0; i < 2 * N; ++i) {
    even0[i] = _mm512_mul_ps(_mm512_loadu_ps(acc0 + kLanes * i), rescale0);
    even1[i] = _mm512_mul_ps(_mm512_loadu_ps(acc1 + kLanes * i), rescale1);
    odd0[i] = odd1[i] = _mm512_setzero_ps();
  }
  std::int64_t j = 0;
  for (; j + 2 <= count; j += 2) {
    const __m512 a0 = _mm512_set1_ps(p0[j]), a1 = _mm512_set1_ps(p0[j + 1]);
    const __m512 b0 = _mm512_set1_ps(p1[j]), b1 = _mm512_set1_ps(p1[j + 1]);
    for (int i = 0; i < N; ++i) {
      __m512 lo, hi;
      prefetch32<Locality>(rows + (j + kDecodePrefetchRows<T>) * stride + 32 * i);
      prefetch32<Locality>(rows + (j + 1 + kDecodePrefetchRows<T>) * stride + 32 * i);
      load32(rows + j * stride + 32 * i, lo, hi);
      even0[2 * i] = _mm512_fmadd_ps(a0, lo, even0[2 * i]);
      even0[2 * i + 1] = _mm512_fmadd_ps(a0, hi, even0[2 * i + 1]);
      even1[2 * i] = _mm512_fmadd_ps(b0, lo, even1[2 * i]);
      even1[2 * i + 1] = _mm512_fmadd_ps(b0, hi, even1[2 * i + 1]);
      load32(rows + (j + 1) * stride + 32 * i, lo, hi);
      odd0[2 * i] = _mm512_fmadd_ps(a1, lo, odd0[2 * i]);
      odd0[2 * i + 1] = _mm512_fmadd_ps(a1, hi, odd0[2 * i + 1]);
      odd1[2 * i] = _mm512_fmadd_ps(b1, lo, odd1[2 * i]);
      odd1[2 * i + 1] = _mm512_fmadd_ps(b1, hi, odd1[2 * i + 1]);
    }
  }
  if (j < count) {
    const __m512 a0 = _mm512_set1_ps(p0[j]), b0 = _mm512_set1_ps(p1[j]);
    for (int i = 0; i < N; ++i) {
      __m512 lo, hi;
      load32(rows + j * stride + 32 * i, lo, hi);
      even0[2 * i] = _mm512_fmadd_ps(a0, lo, even0[2 * i]);
      even0[2 * i + 1] = _mm512_fmadd_ps(a0, hi, even0[2 * i + 1]);
      even1[2 * i] = _mm512_fmadd_ps(b0, lo, even1[2 * i]);
      even1[2 * i + 1] = _mm512_fmadd_ps(b0, hi, even1[2 * i + 1]);
    }
  }
  for (int i = 0; i < 2 * N; ++i) {
    _mm512_storeu_ps(acc0 + kLanes * i, _mm512_add_ps(even0[i], odd0[i]));
    _mm512_storeu_ps(acc1 + kLanes * i, _mm512_add_ps(even1[i], odd1[i]));
  }
}

// One split of one K/V head for `query_count` queries of its group (1 .. kDecodeGroupSlice). Queries
// go in pairs: each key and value row is loaded once per pair, and each 64-row block, read from memory
// by the first pair, comes from L1 for the next. A lone query (multi-head attention) runs the
// one-query kernel as before.
template <int Locality, class T>
ARCH_BENCH_AVX512 void decode_split(const float* queries, std::int64_t query_count, const T* keys, const T* values,
                                    std::int64_t begin, std::int64_t end, std::int64_t dim, float* partials,
                                    std::int64_t partial_stride) {
  alignas(64) float p_all[kDecodeGroupSlice][kBlock];
  DecodeSplitState state;
  state.start(queries, query_count, dim, lane_of<T>);
  for (std::int64_t block = begin; block < end; block += kBlock) {
    const std::int64_t count = std::min(kBlock, end - block);
    const T* rows = values + block * dim;
    std::int64_t query = 0;
    for (; query + 2 <= query_count; query += 2) {
      float *p0 = p_all[query], *p1 = p_all[query + 1];
      float *acc0 = state.acc[query], *acc1 = state.acc[query + 1];
      scores_of_two<Locality>(state.q[query], state.q[query + 1], keys, block, end, count, dim, p0, p1);
      const __m512 rescale0 = softmax_of_block(p0, count, state.m[query], state.l[query]);
      const __m512 rescale1 = softmax_of_block(p1, count, state.m[query + 1], state.l[query + 1]);
      std::int64_t c = 0;
      for (; c + 64 <= dim; c += 64) {
        accumulate_values_of_two<2, Locality>(rows + c, dim, count, p0, p1, rescale0, rescale1, acc0 + c, acc1 + c);
      }
      if (c < dim) {  // dim is a multiple of 32
        accumulate_values_of_two<1, Locality>(rows + c, dim, count, p0, p1, rescale0, rescale1, acc0 + c, acc1 + c);
      }
    }
    if (query < query_count) {
      float* p = p_all[query];
      float* acc = state.acc[query];
      scores_of_one<Locality>(state.q[query], keys, block, end, count, dim, p);
      const __m512 rescale = softmax_of_block(p, count, state.m[query], state.l[query]);
      std::int64_t c = 0;
      for (; c + 128 <= dim; c += 128) accumulate_values<4, Locality>(rows + c, dim, count, p, rescale, acc + c);
      switch ((dim - c) / 32) {
        case 3: accumulate_values<3, Locality>(rows + c, dim, count, p, rescale, acc + c); break;
        case 2: accumulate_values<2, Locality>(rows + c, dim, count, p, rescale, acc + c); break;
        case 1: accumulate_values<1, Locality>(rows + c, dim, count, p, rescale, acc + c); break;
        default: break;
      }
    }
  }
  state.finish(partials, partial_stride, query_count, dim, lane_of<T>);
}

}  // namespace

template <class T>
void softmax_decode_split_avx512(const float* queries, std::int64_t count, const T* keys, const T* values,
                                 std::int64_t begin, std::int64_t end, std::int64_t dim, float* partials,
                                 std::int64_t partial_stride) {
  with_decode_prefetch_locality([&]<int Locality>() {
    decode_split<Locality>(queries, count, keys, values, begin, end, dim, partials, partial_stride);
  });
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                     \
  template void softmax_prefill_avx512<T>(std::int64_t, std::int64_t, std::int64_t, const T*, const T*, \
                                          const T*, T*, std::int64_t, std::int64_t);                  \
  template void softmax_decode_split_avx512<T>(const float*, std::int64_t, const T*, const T*,         \
                                               std::int64_t, std::int64_t, std::int64_t, float*, std::int64_t);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
#endif  // ARCH_BENCH_SOFTMAX_AVX512
