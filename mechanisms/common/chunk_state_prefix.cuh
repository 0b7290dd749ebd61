#pragma once
// The pass over chunks that the bf16 chunkwise prefills share (chunk_scalar_decay.cuh, one decay per
// chunk; rwkv6/chunk_cuda.cu, one per key row and chunk), written once: a thread's pair of adjacent
// elements of a head's state, in place over the chunks, U_c (bf16) becoming the state entering chunk
// c (bf16), S_{c+1} = exp(b_c) S_c + U_c carried in fp32 registers, and the state after the last
// chunk written to `carried` (fp32, which holds the state before the first: a prefill continues from
// it). Loads are issued kBatch chunks at a time, so the sequential chain is not one memory latency
// per chunk.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace arch_bench {

// `column` is the pair's U_0, chunk c's at column[c * pairs]; log_decay(c) is b_c, the log of the
// pair's decay over chunk c.
template <int kBatch, class LogDecay>
__device__ __forceinline__ void carry_state_pair_over_chunks(__nv_bfloat162* __restrict__ column, std::int64_t pairs,
                                                             std::int64_t chunks, float2* __restrict__ carried,
                                                             LogDecay log_decay) {
  float2 running = *carried;
  for (std::int64_t c0 = 0; c0 < chunks; c0 += kBatch) {
    __nv_bfloat162 local[kBatch];
    float carry[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const bool live = c0 + i < chunks;
      local[i] = live ? column[(c0 + i) * pairs] : __floats2bfloat162_rn(0.0f, 0.0f);
      carry[i] = live ? log_decay(c0 + i) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (c0 + i < chunks) {
        column[(c0 + i) * pairs] = __float22bfloat162_rn(running);
        const float factor = expf(carry[i]);
        const float2 u = __bfloat1622float2(local[i]);
        running.x = fmaf(factor, running.x, u.x);
        running.y = fmaf(factor, running.y, u.y);
      }
    }
  }
  *carried = running;
}

}  // namespace arch_bench
