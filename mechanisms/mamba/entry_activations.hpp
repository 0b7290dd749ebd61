#pragma once
// softplus and silu of mamba's per-(channel, entry) prefill (cuda_entry.cu), built on the MUFU's
// ex2.approx and rcp.approx instead of expf, log1pf and an IEEE division: about 15 and 8
// instructions in the SASS where softplus() and silu() of ssm_activations.hpp cost about 50 and 30.
// The kernel computes them once per (token, channel), shared by only N = 16 state entries, so the
// saving is about 3.6 issue slots per element (docs/gpu-guide.md). Host and device: the CPU replay
// (cuda_replay.cpp) runs these very operations with exp2f for ex2.approx and 1 / x for rcp.approx
// (each within 2 ulp of the other); tests/test_mamba_entry_activations.cpp bounds their error
// against fp64 over the inputs' whole range.
#include <math.h>

#if defined(__CUDACC__)
#define ARCH_BENCH_ENTRY_ACTIVATION __host__ __device__ __forceinline__
#else
#define ARCH_BENCH_ENTRY_ACTIVATION inline
#endif

namespace arch_bench {

inline constexpr float kEntryLog2e = 1.4426950408889634f;

// 2^x: ex2.approx.ftz on the device (results below 2^-126 flush to 0), exp2f on the host.
ARCH_BENCH_ENTRY_ACTIVATION float entry_exp2(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

// 1 / x: rcp.approx.ftz on the device, the division on the host.
ARCH_BENCH_ENTRY_ACTIVATION float entry_reciprocal(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return 1.0f / x;
#endif
}

// softplus(x) = max(x, 0) + log1p(e), e = exp(-|x|) in (0, 1]. log1p(e) = 2 atanh(w) with
// w = e / (2 + e) in [0, 1/3]: atanh(w) = w (1 + w^2/3 + w^4/5 + ... + w^12/13), the series cut
// after w^13 (the rest is below 1.4e-8 of the sum at w = 1/3). No cancellation anywhere, so the
// small dt of a very negative x keeps its relative precision (log1pf's reason to exist).
ARCH_BENCH_ENTRY_ACTIVATION float entry_softplus(float x) {
  const float e = entry_exp2(-fabsf(x) * kEntryLog2e);
  const float w = e * entry_reciprocal(2.0f + e);
  const float t = w * w;
  float q = 1.0f / 13.0f;
  q = fmaf(q, t, 1.0f / 11.0f);
  q = fmaf(q, t, 1.0f / 9.0f);
  q = fmaf(q, t, 1.0f / 7.0f);
  q = fmaf(q, t, 1.0f / 5.0f);
  q = fmaf(q, t, 1.0f / 3.0f);
  q = fmaf(q, t, 1.0f);
  const float wq = w * q;
  return fmaf(2.0f, wq, fmaxf(x, 0.0f));
}

// silu(z) = z sigmoid(z) = z / (1 + exp(-z)), the exponent kept <= 0 on both sides of zero.
ARCH_BENCH_ENTRY_ACTIVATION float entry_silu(float z) {
  const float e = entry_exp2(-fabsf(z) * kEntryLog2e);
  const float numerator = z >= 0.0f ? z : z * e;
  return numerator * entry_reciprocal(1.0f + e);
}

}  // namespace arch_bench

#undef ARCH_BENCH_ENTRY_ACTIVATION
