#pragma once
// The two activations of the Mamba and Mamba-2 CUDA kernels (mamba/cuda.cu, mamba2/cuda.cu): the
// softplus that turns dt_raw + dt_bias into the step dt, and the silu of the output gate z. fp32;
// expf and log1pf (not the __ intrinsics) keep fp32 within 1e-4 of the fp64 references. Host and
// device: the kernels' CPU replay (mamba/cuda_replay.cpp) calls these same definitions.
#include <math.h>

#if defined(__CUDACC__)
#define ARCH_BENCH_SSM_ACTIVATION __host__ __device__ __forceinline__
#else
#define ARCH_BENCH_SSM_ACTIVATION inline
#endif

namespace arch_bench {

// softplus(x) = max(x, 0) + log1p(e^-|x|): no overflow for large |x|.
ARCH_BENCH_SSM_ACTIVATION float softplus(float x) { return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); }

// silu(z) = z sigmoid(z), the exponent kept <= 0 on both sides of zero.
ARCH_BENCH_SSM_ACTIVATION float silu(float z) {
  const float e = expf(-fabsf(z));
  return z * (z >= 0.0f ? 1.0f : e) / (1.0f + e);
}

}  // namespace arch_bench

#undef ARCH_BENCH_SSM_ACTIVATION
