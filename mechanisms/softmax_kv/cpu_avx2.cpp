// AVX2 + FMA kernels of softmax_kv. Every function that uses AVX2 carries the target attribute
// (not the whole file), so the inline library code this file instantiates keeps the build's
// baseline ISA and the linker can never hand an AVX2 copy to code that runs on another CPU.
//
// Prefill is FlashAttention-2 on the CPU: cpu_simd_prefill.hpp's microkernels on 8-lane ymm vectors
// (Avx2Vector below), 6 keys x 16 queries a score tile in 12 ymm accumulators.
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
#include "mechanisms/softmax_kv/cpu_decode_split.hpp"
#include "mechanisms/softmax_kv/decode_prefetch.hpp"
#include "mechanisms/softmax_kv/prefill_blocks.hpp"

#define ARCH_BENCH_AVX2 __attribute__((target("avx2,fma")))
#define ARCH_BENCH_SIMD_TARGET ARCH_BENCH_AVX2
#include "mechanisms/softmax_kv/cpu_simd_prefill.hpp"

namespace arch_bench {

namespace {

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

// cpu_simd_prefill.hpp's vector on AVX2: eight fp32 lanes a ymm register, masks as all-ones lanes.
struct Avx2Vector {
  using Float = __m256;
  using Mask = __m256;
  using Int = __m256i;
  using Band = __m256i;  // window - 1: AVX2 compares only with >
  static constexpr int kLanes = 8;
  static constexpr int kMaxTileVectors = 2;  // 16 columns: 6 x 2 accumulators fill the 16 ymm

  ARCH_BENCH_AVX2 static Float zero() { return _mm256_setzero_ps(); }
  ARCH_BENCH_AVX2 static Float set1(float x) { return _mm256_set1_ps(x); }
  ARCH_BENCH_AVX2 static Float broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  ARCH_BENCH_AVX2 static Float load(const float* p) { return load8(p); }
  ARCH_BENCH_AVX2 static Float load(const bf16* p) { return load8(p); }
  ARCH_BENCH_AVX2 static void store(float* p, Float v) { _mm256_storeu_ps(p, v); }
  ARCH_BENCH_AVX2 static Float fmadd(Float a, Float b, Float c) { return _mm256_fmadd_ps(a, b, c); }
  ARCH_BENCH_AVX2 static Float mul(Float a, Float b) { return _mm256_mul_ps(a, b); }
  ARCH_BENCH_AVX2 static Float add(Float a, Float b) { return _mm256_add_ps(a, b); }
  ARCH_BENCH_AVX2 static Float sub(Float a, Float b) { return _mm256_sub_ps(a, b); }
  ARCH_BENCH_AVX2 static Float max(Float a, Float b) { return _mm256_max_ps(a, b); }
  ARCH_BENCH_AVX2 static Float exp_nonpositive(Float x) { return exp_nonpositive8(x); }

  ARCH_BENCH_AVX2 static Band band(std::int64_t window) { return _mm256_set1_epi32(static_cast<int>(window - 1)); }
  ARCH_BENCH_AVX2 static Int lane_distances(std::int64_t first) {
    return _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(static_cast<int>(first)));
  }
  ARCH_BENCH_AVX2 static Mask outside(Int distance, std::int64_t j, Band band) {
    const __m256i d = _mm256_sub_epi32(distance, _mm256_set1_epi32(static_cast<int>(j)));
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), d),
                                               _mm256_cmpgt_epi32(d, band)));
  }
  ARCH_BENCH_AVX2 static Mask equal(Float a, Float b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  ARCH_BENCH_AVX2 static Float replace(Float a, Mask where, Float b) { return _mm256_blendv_ps(a, b, where); }
  ARCH_BENCH_AVX2 static Float zero_where(Mask where, Float a) { return _mm256_andnot_ps(where, a); }
};

}  // namespace

template <class T>
void softmax_prefill_avx2(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, const T* q, const T* k,
                          const T* v, T* out, std::int64_t group, std::int64_t window) {
  prefill_blocks::widening_prefill<WideningKernels<Avx2Vector>>(batch_heads, tokens, dim, q, k, v, out, group, window);
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
  DecodeSplitState state;
  state.start(queries, query_count, dim, lane_of<T>);
  for (std::int64_t block = begin; block < end; block += kBlock) {
    // The group's queries one after another over the same block: after the first, its rows come from L1.
    for (std::int64_t query = 0; query < query_count; ++query) {
      const float* q = state.q[query];
      float* acc = state.acc[query];
      float& m = state.m[query];
      float& l = state.l[query];
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
  state.finish(partials, partial_stride, query_count, dim, lane_of<T>);
}

template <class T>
void softmax_decode_split_avx2(const float* queries, std::int64_t count, const T* keys, const T* values,
                               std::int64_t begin, std::int64_t end, std::int64_t dim, float* partials,
                               std::int64_t partial_stride) {
  with_decode_prefetch_locality([&]<int Locality>() {
    decode_split<Locality>(queries, count, keys, values, begin, end, dim, partials, partial_stride);
  });
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
