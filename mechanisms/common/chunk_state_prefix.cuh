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

// Thread threadIdx.x of block blockIdx.x (blocks_per_head blocks of kThreads threads per head) owns
// pair e of head bh, if e < pairs. column_of(bh, e) is the pair's U_0 (chunk c's at column[c *
// pairs]); log_decay_of(bh, e) gives the pair's b_c as a function of the chunk c.
template <int kBatch, int kThreads, class Column, class LogDecayOf>
__device__ __forceinline__ void carry_state_pair_over_chunks(std::int64_t blocks_per_head, std::int64_t pairs,
                                                             std::int64_t chunks, float* __restrict__ state,
                                                             Column column_of, LogDecayOf log_decay_of) {
  const unsigned per_head = static_cast<unsigned>(blocks_per_head);
  const std::int64_t bh = blockIdx.x / per_head;
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x % per_head) * kThreads + threadIdx.x;
  if (e >= pairs) return;
  // A head's state has 2 * pairs elements, so each head's fp32 state starts 8-byte aligned.
  float2* carried = reinterpret_cast<float2*>(state + bh * 2 * pairs) + e;
  __nv_bfloat162* column = column_of(bh, e);
  const auto log_decay = log_decay_of(bh, e);
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
