#pragma once
// An 8-float vector (GCC/Clang vector extensions: one ymm register with AVX/AVX2, two xmm without)
// and the few operations the scan kernels need on it, for loops whose natural vector is a state row
// rather than a loop index that `#pragma omp simd` could vectorise (Mamba's state: N = 16 entries
// are two vectors held in registers across the time loop).
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "mechanisms/common/bf16.hpp"
#include "mechanisms/common/kernel_helpers.hpp"

namespace arch_bench {
ARCH_BENCH_KERNEL_HELPERS_BEGIN

using float8 = float __attribute__((vector_size(32)));
using int8x32 = std::int32_t __attribute__((vector_size(32)));
inline constexpr std::int64_t kFloat8Lanes = 8;

inline float8 load_float8(const float* p) {
  float8 v;
  std::memcpy(&v, p, sizeof v);  // unaligned load; compiles to one vmovups
  return v;
}
// 8 bf16 widened to fp32 in the load (a zero-extend and a shift: bf16 is the high half of a float).
// With AVX2 one vpmovzxwd from memory and a shift (gcc 12 splits the generic conversion into two
// 128-bit halves and a merge).
inline float8 load_float8(const bf16* p) {
#if defined(__AVX2__)
  const __m256i widened = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return std::bit_cast<float8>(_mm256_slli_epi32(widened, 16));
#else
  using uint16x8 = std::uint16_t __attribute__((vector_size(16)));
  uint16x8 halves;
  std::memcpy(&halves, p, sizeof halves);
  return std::bit_cast<float8>(__builtin_convertvector(halves, int8x32) << 16);
#endif
}
inline void store_float8(float* p, float8 v) { std::memcpy(p, &v, sizeof v); }
inline float8 broadcast_float8(float x) { return float8{} + x; }

// e^x for x <= 0, lane-wise: the algorithm and coefficients of fast_math.hpp's exp_nonpositive
// (relative error < 2e-7 on [-87, 0], clamped below at -87), with two vector shortcuts:
// n = rint(x log2 e) by adding and subtracting 1.5 * 2^23 (round to nearest even, like rint), and
// 2^n built from the low bits of that same sum, (n + 127) << 23, which saves the float-to-int
// conversion.
inline float8 exp_nonpositive(float8 x) {
#if defined(__AVX__)
  // One maxps instead of a compare and a blend; maxps returns its second operand when either is
  // NaN, so with x second a NaN stays NaN (and shows in the output check).
  x = _mm256_max_ps(broadcast_float8(-87.0f), x);
#else
  x = x < -87.0f ? broadcast_float8(-87.0f) : x;
#endif
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float8 shifted = x * 1.44269504088896341f + kRound;
  const float8 n = shifted - kRound;
  const float8 r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float8 p = broadcast_float8(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int8x32 exponent = (std::bit_cast<int8x32>(shifted) + 127) << 23;
  return p * std::bit_cast<float8>(exponent);
}

// 2^x for x <= 0, lane-wise, for a caller whose exponent is already in base 2 (Mamba's scan folds
// log2 e into A once per row). The reduction r = x - rint(x) is then exact (no Cody-Waite split),
// and 2^r on [-1/2, 1/2] takes a degree-5 polynomial 1 + c1 r + ... + c5 r^5, its coefficients
// fitted here for minimax relative error (Lawson's iteration in double on 20001 points). Evaluated
// in float with FMAs the result stays within 1.7e-7 of 2^x (tested). Seven multiply-class
// operations per vector against exp_nonpositive's eleven: a scan bound by its exps runs that much
// faster. Clamped below at -126 (2^-126 is the smallest normal float).
inline float8 exp2_nonpositive(float8 x) {
#if defined(__AVX__)
  x = _mm256_max_ps(broadcast_float8(-126.0f), x);  // second operand x: a NaN stays NaN
#else
  x = x < -126.0f ? broadcast_float8(-126.0f) : x;
#endif
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float8 shifted = x + kRound;
  const float8 r = x - (shifted - kRound);
  float8 p = broadcast_float8(1.3264698e-3f);
  p = p * r + 9.671509e-3f;
  p = p * r + 5.550734e-2f;
  p = p * r + 2.4022242e-1f;
  p = p * r + 6.931470e-1f;
  p = p * r + 1.0f;
  const int8x32 exponent = (std::bit_cast<int8x32>(shifted) + 127) << 23;
  return p * std::bit_cast<float8>(exponent);
}

// e^x lane-wise for any x, clamped above at 88 (e^88 < FLT_MAX) as fast_math.hpp's exp_clamped;
// exp_nonpositive's range reduction holds up to 88 (n <= 127 keeps the exponent field finite).
inline float8 exp_clamped(float8 x) {
#if defined(__AVX__)
  x = _mm256_min_ps(broadcast_float8(88.0f), x);  // minps returns its second operand for NaN
#else
  x = x > 88.0f ? broadcast_float8(88.0f) : x;
#endif
  return exp_nonpositive(x);
}

// The sum of the 8 lanes.
inline float sum_lanes(float8 v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

// sums[t] = the sum of the 8 lanes of rows[t], for `count` rows of 8 floats. With AVX, eight rows
// at a time through a horizontal-add tree (9 instructions per 8 rows); a per-row reduction is a
// dependent chain of shuffles and adds per row instead.
inline void sum_lanes(std::int64_t count, const float* rows, float* sums) {
  std::int64_t t = 0;
#if defined(__AVX__)
  for (; t + 8 <= count; t += 8) {
    const float* p = rows + t * 8;
    const __m256 s01 = _mm256_hadd_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8));
    const __m256 s23 = _mm256_hadd_ps(_mm256_loadu_ps(p + 16), _mm256_loadu_ps(p + 24));
    const __m256 s45 = _mm256_hadd_ps(_mm256_loadu_ps(p + 32), _mm256_loadu_ps(p + 40));
    const __m256 s67 = _mm256_hadd_ps(_mm256_loadu_ps(p + 48), _mm256_loadu_ps(p + 56));
    const __m256 s0123 = _mm256_hadd_ps(s01, s23);  // lanes: low halves of rows 0-3 | high halves
    const __m256 s4567 = _mm256_hadd_ps(s45, s67);
    const __m256 low = _mm256_permute2f128_ps(s0123, s4567, 0x20);
    const __m256 high = _mm256_permute2f128_ps(s0123, s4567, 0x31);
    _mm256_storeu_ps(sums + t, _mm256_add_ps(low, high));
  }
#endif
  for (; t < count; ++t) {
    const float* p = rows + t * 8;
    sums[t] = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
  }
}

ARCH_BENCH_KERNEL_HELPERS_END
}  // namespace arch_bench
