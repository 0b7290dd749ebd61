#pragma once
// The two activations of the Mamba and Mamba-2 CUDA kernels (mamba/cuda.cu, mamba2/cuda.cu): the
// softplus that turns dt_raw + dt_bias into the step dt, and the silu of the output gate z. fp32;
// expf and log1pf (not the __ intrinsics) keep fp32 within 1e-4 of the fp64 references.
#include <cuda_runtime.h>

namespace arch_bench {

// softplus(x) = max(x, 0) + log1p(e^-|x|): no overflow for large |x|.
__device__ __forceinline__ float softplus(float x) { return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); }

// silu(z) = z sigmoid(z), the exponent kept <= 0 on both sides of zero.
__device__ __forceinline__ float silu(float z) {
  const float e = expf(-fabsf(z));
  return z * (z >= 0.0f ? 1.0f : e) / (1.0f + e);
}

}  // namespace arch_bench
