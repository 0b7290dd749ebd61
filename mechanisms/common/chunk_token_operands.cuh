#pragma once
// The operands most chunkwise policies (chunk_scalar_decay.cuh, chunk_delta_rule.cuh) read as they
// come: q/k [bh, L, dk], v/out [bh, L, dv], bf16, row-major, one row per token. A mechanism's policy
// derives from it and adds its decay (and gates); one that transforms an operand (linear
// attention's phi) hides the accessor and calls this one for the raw element.
#include <cuda_bf16.h>

#include <cstdint>

namespace arch_bench {

struct ChunkTokenOperands {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  __nv_bfloat16* out;
  std::int64_t tokens;
  int dk;
  int dv;

  __device__ __forceinline__ __nv_bfloat16 q_at(std::int64_t bh, std::int64_t t, int i) const {
    return q[(bh * tokens + t) * dk + i];
  }
  __device__ __forceinline__ __nv_bfloat16 k_at(std::int64_t bh, std::int64_t t, int i) const {
    return k[(bh * tokens + t) * dk + i];
  }
  __device__ __forceinline__ __nv_bfloat16 v_at(std::int64_t bh, std::int64_t t, int j) const {
    return v[(bh * tokens + t) * dv + j];
  }
  __device__ __forceinline__ void store(std::int64_t bh, std::int64_t t, int j, float o) const {
    out[(bh * tokens + t) * dv + j] = __float2bfloat16_rn(o);
  }
};

}  // namespace arch_bench
