#pragma once
// 2^x for x <= 0 on the FMA pipe: Cody-Waite range reduction and a degree-5 minimax polynomial.
// The per-(channel, entry) prefill (cuda_entry.cu) can take a fraction of its exps here instead of
// the MUFU's ex2.approx, so that the two pipes share the work (none now: its issue and MUFU are
// balanced, cuda_plan.hpp's kMambaEntryPolynomialTokens): the idea is FlashAttention-4's (Tri Dao
// and collaborators, 2025, for Blackwell, as its authors' talks and write-ups of its code describe
// it: part of the softmax's exp2 by a polynomial on the FMA units, where the MUFU is the
// bottleneck). The range reduction and the coefficients here are our own: a
// Remez exchange for the least maximum relative error of p(f) ~ 2^f on [-1/2, 1/2] (7.49e-8 in
// exact arithmetic), rounded to fp32 (2.1e-7 evaluated in fp32 on a grid of [-1/2, 1/2]). Evaluated in fp32, the measured maximum relative error is in
// tests/test_mamba_exp2_poly.cpp (kMambaExp2PolyMaxRelError), over the whole input range the kernel
// can feed it. Host and device: the kernel and its CPU replay (cuda_replay.cpp) run these very
// operations, so the replay's exps are the kernel's bit for bit.
//
// Steps (about 12 instructions in the SASS: FMNMX, 3 FADD, 5 FFMA, a shift and an add for 2^j, FMUL):
//   xc = max(x, -127)                    -inf and anything below -127 clamp (the result is then 0)
//   r  = xc + 1.5 * 2^23                 rounds xc to the integer j in r's low mantissa bits
//   f  = xc - (r - 1.5 * 2^23)           in [-1/2, 1/2], exact (Sterbenz)
//   p  = c0 + f (c1 + f (c2 + ... ))     Horner, fmaf
//   2^j from r's bits: (bits(r) << 23) + (127 << 23) is the fp32 2^j for j in [-126, 0] and +0 for
//   j = -127 (the biased exponent 0 with a zero mantissa), so x < -126.5 gives exactly 0, like
//   ex2.approx.ftz's flush of results below 2^-126.
//   result = p * 2^j
// Inputs are x = dt (A log2 e) <= 0 (dt >= 0, A < 0). x in (0, 1/2] is also exact-range (j = 0);
// larger positive x is not used.
#include <cstdint>
#include <cstring>
#include <math.h>

#if defined(__CUDACC__)
#define ARCH_BENCH_EXP2_POLY __host__ __device__ __forceinline__
#else
#define ARCH_BENCH_EXP2_POLY inline
#endif

namespace arch_bench {

// p(f) = sum c_k f^k, minimax relative error on [-1/2, 1/2]; the fp32 values (hex floats, exact).
// Scalars, not an array: nvcc lets device code read a host constexpr scalar, not an array.
// c0 is the fit's 1.0000000717 rounded down to 1, not to the nearest 1 + 2^-23: p(0) = 1 exactly,
// so that the identity steps past a sequence's end (dt = 0) leave h untouched, for 1e-9 more error.
inline constexpr float kMambaExp2PolyC0 = 1.0f;
inline constexpr float kMambaExp2PolyC1 = 0x1.62e428p-1f;   // 0.6931469671
inline constexpr float kMambaExp2PolyC2 = 0x1.ebf918p-3f;   // 0.2402211972
inline constexpr float kMambaExp2PolyC3 = 0x1.c6b6e4p-5f;   // 0.0555071327
inline constexpr float kMambaExp2PolyC4 = 0x1.3d0c52p-7f;   // 0.0096755413
inline constexpr float kMambaExp2PolyC5 = 0x1.5c08e6p-10f;  // 0.0013276472
inline constexpr float kMambaExp2PolyLowest = -127.0f;
inline constexpr float kMambaExp2PolyRound = 12582912.0f;  // 1.5 x 2^23

// The evaluation with the coefficients given (the replay's faults pass a wrong one).
ARCH_BENCH_EXP2_POLY float mamba_exp2_poly_eval(float x, float c0, float c1, float c2, float c3, float c4, float c5) {
  const float xc = fmaxf(x, kMambaExp2PolyLowest);  // -inf (and NaN) to -127: the result is then 0
  const float r = xc + kMambaExp2PolyRound;
  const float f = xc - (r - kMambaExp2PolyRound);
  float p = c5;
  p = fmaf(p, f, c4);
  p = fmaf(p, f, c3);
  p = fmaf(p, f, c2);
  p = fmaf(p, f, c1);
  p = fmaf(p, f, c0);
  std::uint32_t bits;
#if defined(__CUDA_ARCH__)
  bits = __float_as_uint(r);
#else
  std::memcpy(&bits, &r, sizeof bits);
#endif
  const std::uint32_t scale_bits = (bits << 23) + (127u << 23);
  float scale;
#if defined(__CUDA_ARCH__)
  scale = __uint_as_float(scale_bits);
#else
  std::memcpy(&scale, &scale_bits, sizeof scale);
#endif
  return p * scale;
}

ARCH_BENCH_EXP2_POLY float mamba_exp2_poly(float x) {
  return mamba_exp2_poly_eval(x, kMambaExp2PolyC0, kMambaExp2PolyC1, kMambaExp2PolyC2, kMambaExp2PolyC3,
                              kMambaExp2PolyC4, kMambaExp2PolyC5);
}

}  // namespace arch_bench

#undef ARCH_BENCH_EXP2_POLY
