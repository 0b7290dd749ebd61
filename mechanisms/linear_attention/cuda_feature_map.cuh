#pragma once
// The feature map phi of linear attention on the device, shared by the SIMT kernels (cuda.cu) and
// the tensor-core prefill (cuda_tensor_core.cu): the same maps as feature_maps.hpp; expf (not
// __expf) keeps fp32 within 1e-4.
#include "mechanisms/common/feature_maps.hpp"

namespace arch_bench {

__device__ __forceinline__ float phi(FeatureMap map, float x) {
  if (map == FeatureMap::relu_plus_one) return fmaxf(x, 0.0f) + 1.0f;
  return x > 0.0f ? x + 1.0f : expf(x);
}

}  // namespace arch_bench
