#pragma once
// sin and cos of a projection as Performer's CUDA kernels compute them for trig features (cuda.cu,
// cuda_tensor_core.cu), the same arithmetic as the CPU kernel's trig_features (cpu.cpp): one
// Cody-Waite reduction by pi/2 in three parts and the Cephes polynomials on [-pi/4, pi/4] (|error|
// < 1e-7 for |x| up to ~1e4). sincosf would do on the device, but its slow path for large |x|
// (Payne-Hanek) needs a local array. Host and device: the tensor-core prefill's CPU replay
// (cuda_replay.cpp) calls this same definition.
#include <math.h>

#if defined(__CUDACC__)
#define ARCH_BENCH_PERFORMER_TRIG __host__ __device__ __forceinline__
#else
#define ARCH_BENCH_PERFORMER_TRIG inline
#endif

namespace arch_bench {

ARCH_BENCH_PERFORMER_TRIG void performer_trig_pair(float x, float* sine, float* cosine) {
  const float n = rintf(x * 0.636619772367581343f);
  const float r = ((x - n * 1.5703125f) - n * 4.837512969970703125e-4f) - n * 7.54978995489188216e-8f;
  const float z = r * r;
  const float s = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
  const float c =
      ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
  const int quadrant = static_cast<int>(n) & 3;
  const float a = (quadrant & 1) ? c : s;
  const float b = (quadrant & 1) ? s : c;
  *sine = (quadrant & 2) ? -a : a;
  *cosine = ((quadrant + 1) & 2) ? -b : b;
}

}  // namespace arch_bench

#undef ARCH_BENCH_PERFORMER_TRIG
