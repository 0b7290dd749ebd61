#pragma once
// Vectorisable float math for the hot loops. libm's expf is a scalar call that gcc only replaces
// with a SIMD variant under -ffast-math, which would also break the isfinite() checks the harness
// relies on; this exp is branch-free arithmetic that `#pragma omp simd` vectorises.
#include <bit>
#include <cstdint>

#include "core/kernel_helpers.hpp"

namespace arch_bench {
ARCH_BENCH_KERNEL_HELPERS_BEGIN

// e^x for x <= 0 (softmax exponents after max subtraction); relative error < 1.9e-7 on
// [-87, 0], and underflows smoothly to ~0 below -87 (including -inf).
#pragma omp declare simd
inline float exp_nonpositive(float x) {
  // Branch-free clamp (a select on the bit patterns): gcc 12 turns `x < -87 ? -87 : x` into a
  // branch here, which keeps the calling loop scalar. NaN compares false and stays NaN.
  const std::uint32_t below = -static_cast<std::uint32_t>(x < -87.0f);
  x = std::bit_cast<float>((below & std::bit_cast<std::uint32_t>(-87.0f)) |
                           (~below & std::bit_cast<std::uint32_t>(x)));
  // x = n ln2 + r with |r| <= ln2/2; e^x = 2^n e^r. n = rint(x log2 e) by adding and subtracting
  // 1.5 * 2^23 (round to nearest even, like rint, for |x log2 e| < 2^22), and 2^n is built from the
  // low bits of that same sum below. Plain adds vectorise on every ISA: SSE2 has no vector rint
  // (roundps is SSE4.1), and a call to rintf kept the loops calling this one scalar there.
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float shifted = x * 1.44269504088896341f + kRound;
  const float n = shifted - kRound;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // ln2 split in hi + lo parts
  // e^r on [-ln2/2, ln2/2]: a degree-5 polynomial with constant term exactly 1, its other
  // coefficients fitted here for minimax relative error (Lawson's iteration in long double on 20001
  // points; 9.2e-8 in exact arithmetic). Evaluated in float the whole exp stays within 1.8e-7 of e^x
  // with FMAs and 1.9e-7 without (both tested), where the degree-7 Cephes expf polynomial it replaced
  // gave 8.3e-8 for two more multiply-adds: the elu map of linear attention, bound by its
  // exponentials, ran 4-5% faster for it (8 heads x 64, T = 2048, Zen 3).
  float p = 8.290282451e-3f;
  p = p * r + 4.189806059e-2f;
  p = p * r + 1.666763723e-1f;
  p = p * r + 4.999914765e-1f;
  p = p * r + 9.999997020e-1f;
  p = p * r + 1.0f;
  // shifted's low mantissa bits hold n (its high bits fall off the shift): (n + 127) << 23.
  const std::int32_t exponent = (std::bit_cast<std::int32_t>(shifted) + 127) << 23;
  return p * std::bit_cast<float>(exponent);
}

// e^x over the whole float range (RWKV-6's decay exp(-exp(d)) needs e^d for d of either sign):
// clamps x above at 88 (e^88 < FLT_MAX), then exp_nonpositive, whose range reduction holds up to 88
// (n <= 127 keeps the exponent field finite). Same relative error < 1.9e-7; the hot loops whose
// exponents are already <= 0 call exp_nonpositive and skip this clamp.
#pragma omp declare simd
inline float exp_clamped(float x) {
  const std::uint32_t above = -static_cast<std::uint32_t>(x > 88.0f);
  x = std::bit_cast<float>((above & std::bit_cast<std::uint32_t>(88.0f)) |
                           (~above & std::bit_cast<std::uint32_t>(x)));
  return exp_nonpositive(x);
}

ARCH_BENCH_KERNEL_HELPERS_END
}  // namespace arch_bench
