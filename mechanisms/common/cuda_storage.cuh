#pragma once
// Device-side storage dtypes shared by the mechanisms' CUDA kernels: the CUDA type that holds each
// host storage type (bf16 -> __nv_bfloat16, same bits) and the fp32 widening load / rounding store.
// Math is fp32 whatever the storage; stores round to nearest even, as the CPU kernels do.
#include <cuda_bf16.h>

#include "core/bf16.hpp"

namespace arch_bench {

template <class T>
struct DeviceStorage {
  using type = T;
};
template <>
struct DeviceStorage<bf16> {
  using type = __nv_bfloat16;
};
static_assert(sizeof(bf16) == sizeof(__nv_bfloat16));

__device__ __forceinline__ float load_float(float x) { return x; }
__device__ __forceinline__ float load_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void store_float(float* p, float x) { *p = x; }
__device__ __forceinline__ void store_float(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

}  // namespace arch_bench
