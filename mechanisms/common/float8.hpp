#pragma once
// An 8-float vector and the few operations the scan kernels need on it, for loops whose natural
// vector is a state row rather than a loop index that `#pragma omp simd` could vectorise (Mamba's
// state: N = 16 entries are two vectors held in registers across the time loop).
//
// Two representations, one interface. With AVX, float8 is a GCC/Clang vector of 8 floats: one ymm
// register, its operators the hardware's. Without AVX (the x86-64 SSE2 baseline, and AArch64's
// 128-bit NEON) it is a pair of 4-float vectors with the same operators. GCC 12 has no register for
// a 32-byte vector there and keeps such a value in memory, every operation a load and a store that
// stall store forwarding (about three quarters of the SSE2 linear decode step's samples); a pair of
// 16-byte vectors is two registers, which scalar replacement keeps out of memory.
//
// Kernels use only this interface: load/store/broadcast, + - * / (with a float on either side),
// lane reads v[i], float8{} for zero, comparisons giving a mask8 and select(mask, a, b) for a
// lane-wise choice (a `?:` cannot be overloaded), and the exponentials below.
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__AVX__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/bf16.hpp"
#include "core/kernel_helpers.hpp"

namespace arch_bench {

// 4-lane vectors (not float4/int4: CUDA's vector types of those names are global).
using vec4f = float __attribute__((vector_size(16)));
using vec4i = std::int32_t __attribute__((vector_size(16)));
using int8x32 = std::int32_t __attribute__((vector_size(32)));
inline constexpr std::int64_t kFloat8Lanes = 8;

#if defined(__AVX__)
#define ARCH_BENCH_FLOAT8_IS_ONE_VECTOR 1
using float8 = float __attribute__((vector_size(32)));
using mask8 = int8x32;  // what a comparison of two float8 gives: all ones where true
#else
// Two 4-float halves (lanes 0-3, 4-7); named for what it is, so the type differs in name from the
// one-vector float8 of the AVX variants (kernel_helpers.hpp: a type's name is one across variants).
struct float4_pair {
  vec4f lo, hi;
  float operator[](int lane) const { return lane < 4 ? lo[lane] : hi[lane - 4]; }
};
struct mask4_pair {
  vec4i lo, hi;
};
using float8 = float4_pair;
using mask8 = mask4_pair;
#endif

ARCH_BENCH_KERNEL_HELPERS_BEGIN

#if !defined(ARCH_BENCH_FLOAT8_IS_ONE_VECTOR)
// The pair's operators, half by half.
#define ARCH_BENCH_FLOAT8_PAIR_OPERATOR(op)                                                        \
  inline float8 operator op(float8 a, float8 b) { return {a.lo op b.lo, a.hi op b.hi}; }          \
  inline float8 operator op(float8 a, float b) { return {a.lo op b, a.hi op b}; }                 \
  inline float8 operator op(float a, float8 b) { return {a op b.lo, a op b.hi}; }                 \
  inline float8& operator op##=(float8& a, float8 b) { return a = a op b; }                       \
  inline float8& operator op##=(float8& a, float b) { return a = a op b; }
ARCH_BENCH_FLOAT8_PAIR_OPERATOR(+)
ARCH_BENCH_FLOAT8_PAIR_OPERATOR(-)
ARCH_BENCH_FLOAT8_PAIR_OPERATOR(*)
ARCH_BENCH_FLOAT8_PAIR_OPERATOR(/)
#undef ARCH_BENCH_FLOAT8_PAIR_OPERATOR
inline float8 operator-(float8 a) { return {-a.lo, -a.hi}; }
#define ARCH_BENCH_FLOAT8_PAIR_COMPARISON(op)                                                      \
  inline mask8 operator op(float8 a, float8 b) { return {a.lo op b.lo, a.hi op b.hi}; }           \
  inline mask8 operator op(float8 a, float b) { return {a.lo op b, a.hi op b}; }
ARCH_BENCH_FLOAT8_PAIR_COMPARISON(<)
ARCH_BENCH_FLOAT8_PAIR_COMPARISON(>)
#undef ARCH_BENCH_FLOAT8_PAIR_COMPARISON
#endif

// Lane-wise: a where the mask is set, b elsewhere.
inline float8 select(mask8 mask, float8 a, float8 b) {
#if defined(ARCH_BENCH_FLOAT8_IS_ONE_VECTOR)
  return mask ? a : b;
#else
  return {mask.lo ? a.lo : b.lo, mask.hi ? a.hi : b.hi};
#endif
}

inline float8 load_float8(const float* p) {
  float8 v;
  std::memcpy(&v, p, sizeof v);  // unaligned load; one vmovups, or two movups for the pair
  return v;
}
// 8 bf16 widened to fp32 in the load (a zero-extend and a shift: bf16 is the high half of a float).
// With AVX2 one vpmovzxwd from memory and a shift (gcc 12 splits the generic conversion into two
// 128-bit halves and a merge).
inline float8 load_float8(const bf16* p) {
#if defined(__AVX2__)
  const __m256i widened = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return std::bit_cast<float8>(_mm256_slli_epi32(widened, 16));
#elif defined(ARCH_BENCH_FLOAT8_IS_ONE_VECTOR)
  using uint16x8 = std::uint16_t __attribute__((vector_size(16)));
  uint16x8 halves;
  std::memcpy(&halves, p, sizeof halves);
  return std::bit_cast<float8>(__builtin_convertvector(halves, int8x32) << 16);
#else
  using uint16x4 = std::uint16_t __attribute__((vector_size(8)));
  uint16x4 halves[2];
  std::memcpy(halves, p, sizeof halves);
  return {std::bit_cast<vec4f>(__builtin_convertvector(halves[0], vec4i) << 16),
          std::bit_cast<vec4f>(__builtin_convertvector(halves[1], vec4i) << 16)};
#endif
}
inline void store_float8(float* p, float8 v) { std::memcpy(p, &v, sizeof v); }
inline float8 broadcast_float8(float x) { return float8{} + x; }

// The exponentials, written once over a vector V of floats (float8 itself, one half of the pair, or
// wide_vector.hpp's 16 lanes) whose same-sized integer vector is I.
namespace lanes {

// max(lo, x) lane-wise with x's NaN kept: maxps returns its second operand when either is NaN (one
// instruction instead of a compare and a blend). The 16-lane forms go through GCC's builtins: its
// _mm512_max_ps and _mm512_min_ps pass _mm512_undefined_ps() as the unused merge source, which trips
// a false -Wmaybe-uninitialized in every caller (GCC bug 105593).
#if defined(__AVX512F__) && !defined(__clang__)
#define ARCH_BENCH_MAX_PS512(a, b) \
  __builtin_ia32_maxps512_mask((a), (b), (b), static_cast<__mmask16>(-1), _MM_FROUND_CUR_DIRECTION)
#define ARCH_BENCH_MIN_PS512(a, b) \
  __builtin_ia32_minps512_mask((a), (b), (b), static_cast<__mmask16>(-1), _MM_FROUND_CUR_DIRECTION)
#elif defined(__AVX512F__)
#define ARCH_BENCH_MAX_PS512(a, b) _mm512_max_ps((a), (b))
#define ARCH_BENCH_MIN_PS512(a, b) _mm512_min_ps((a), (b))
#endif
template <class V>
inline V clamp_below(V x, float lo) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64) return ARCH_BENCH_MAX_PS512(V{} + lo, x);
#endif
#if defined(__AVX__)
  if constexpr (sizeof(V) == 32) return _mm256_max_ps(V{} + lo, x);
#endif
#if defined(__SSE2__)
  if constexpr (sizeof(V) == 16) return _mm_max_ps(V{} + lo, x);
#endif
  return x < lo ? V{} + lo : x;  // NaN compares false and stays
}
template <class V>
inline V clamp_above(V x, float hi) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64) return ARCH_BENCH_MIN_PS512(V{} + hi, x);
#endif
#if defined(__AVX__)
  if constexpr (sizeof(V) == 32) return _mm256_min_ps(V{} + hi, x);  // minps: NaN in x stays
#endif
#if defined(__SSE2__)
  if constexpr (sizeof(V) == 16) return _mm_min_ps(V{} + hi, x);
#endif
  return x > hi ? V{} + hi : x;
}
#undef ARCH_BENCH_MAX_PS512
#undef ARCH_BENCH_MIN_PS512

// e^x for x <= 0: fast_math.hpp's exp_nonpositive (relative error < 1.8e-7 on [-87, 0] with FMAs,
// 1.9e-7 without; clamped below at -87), with two vector shortcuts: n = rint(x log2 e) by adding and subtracting 1.5 * 2^23
// (round to nearest even, like rint), and 2^n built from the low bits of that same sum,
// (n + 127) << 23, which saves the float-to-int conversion.
template <class V, class I>
inline V exp_nonpositive(V x) {
  x = clamp_below(x, -87.0f);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const V shifted = x * 1.44269504088896341f + kRound;
  const V n = shifted - kRound;
  const V r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  V p = V{} + 8.290282451e-3f;  // fast_math.hpp's degree-5 fit
  p = p * r + 4.189806059e-2f;
  p = p * r + 1.666763723e-1f;
  p = p * r + 4.999914765e-1f;
  p = p * r + 9.999997020e-1f;
  p = p * r + 1.0f;
  const I exponent = (std::bit_cast<I>(shifted) + 127) << 23;
  return p * std::bit_cast<V>(exponent);
}

// 2^r for |r| <= 1/2, the polynomial of exp2_nonpositive below (wide_vector.hpp's 16-lane form
// shares it).
template <class V>
inline V exp2_reduced(V r) {
  V p = V{} + 1.3264698e-3f;
  p = p * r + 9.671509e-3f;
  p = p * r + 5.550734e-2f;
  p = p * r + 2.4022242e-1f;
  p = p * r + 6.931470e-1f;
  return p * r + 1.0f;
}

// 2^x for x <= 0, for a caller whose exponent is already in base 2 (Mamba's scan folds log2 e into
// A once per row). The reduction r = x - rint(x) is then exact (no Cody-Waite split), and 2^r on
// [-1/2, 1/2] takes a degree-5 polynomial 1 + c1 r + ... + c5 r^5, its coefficients fitted here for
// minimax relative error (Lawson's iteration in double on 20001 points). Evaluated in float the
// result stays within 1.7e-7 of 2^x with FMAs and 2e-7 without (SSE2; both tested). Seven multiply-class
// operations per vector against exp_nonpositive's nine: a scan bound by its exps runs that much
// faster. Clamped below at -126 (2^-126 is the smallest normal float).
template <class V, class I>
inline V exp2_nonpositive(V x) {
  x = clamp_below(x, -126.0f);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const V shifted = x + kRound;
  const V r = x - (shifted - kRound);
  const I exponent = (std::bit_cast<I>(shifted) + 127) << 23;
  return exp2_reduced(r) * std::bit_cast<V>(exponent);
}

}  // namespace lanes

// max(lo, x) and min(hi, x) lane-wise, a NaN in x kept.
#if defined(ARCH_BENCH_FLOAT8_IS_ONE_VECTOR)
inline float8 clamp_below(float8 x, float lo) { return lanes::clamp_below(x, lo); }
inline float8 clamp_above(float8 x, float hi) { return lanes::clamp_above(x, hi); }
#else
inline float8 clamp_below(float8 x, float lo) { return {lanes::clamp_below(x.lo, lo), lanes::clamp_below(x.hi, lo)}; }
inline float8 clamp_above(float8 x, float hi) { return {lanes::clamp_above(x.lo, hi), lanes::clamp_above(x.hi, hi)}; }
#endif

#if defined(ARCH_BENCH_FLOAT8_IS_ONE_VECTOR)
inline float8 exp_nonpositive(float8 x) { return lanes::exp_nonpositive<float8, int8x32>(x); }
inline float8 exp2_nonpositive(float8 x) { return lanes::exp2_nonpositive<float8, int8x32>(x); }
// e^x lane-wise for any x, clamped above at 88 (e^88 < FLT_MAX) as fast_math.hpp's exp_clamped;
// exp_nonpositive's range reduction holds up to 88 (n <= 127 keeps the exponent field finite).
inline float8 exp_clamped(float8 x) { return exp_nonpositive(lanes::clamp_above(x, 88.0f)); }
#else
inline float8 exp_nonpositive(float8 x) {
  return {lanes::exp_nonpositive<vec4f, vec4i>(x.lo), lanes::exp_nonpositive<vec4f, vec4i>(x.hi)};
}
inline float8 exp2_nonpositive(float8 x) {
  return {lanes::exp2_nonpositive<vec4f, vec4i>(x.lo), lanes::exp2_nonpositive<vec4f, vec4i>(x.hi)};
}
inline float8 exp_clamped(float8 x) {
  return exp_nonpositive(float8{lanes::clamp_above(x.lo, 88.0f), lanes::clamp_above(x.hi, 88.0f)});
}
#endif

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
