#pragma once
// The inclusive cumulative log-decay of a 64-token chunk, the scan both chunkwise tensor-core kernel
// sets with a scalar decay per token start from (chunk_scalar_decay.cuh, chunk_delta_rule.cuh):
// written once, so that every kernel that reads b sees the same bits.
#include <cuda_runtime.h>

#include <cstdint>

namespace arch_bench {

inline constexpr int kLogDecayScanTokens = 64;  // 32 lanes x 2 tokens

// b[0..64): b[m] = sum of log a_t over the chunk's tokens 0..m (policy.log_decay(bh, first + m),
// 0 past the sequence, so b stays flat over the padding and b[63] is the chunk's total). Warp 0
// only: lane l owns tokens 2l, 2l+1 and an inclusive shuffle scan adds the lanes below it.
template <class Policy>
__device__ __forceinline__ void cumulative_log_decay(const Policy& policy, float* __restrict__ b, std::int64_t bh,
                                                     std::int64_t first, int rows) {
  if (threadIdx.x >= 32) return;
  const int lane = static_cast<int>(threadIdx.x);
  const float x0 = 2 * lane < rows ? policy.log_decay(bh, first + 2 * lane) : 0.0f;
  const float x1 = 2 * lane + 1 < rows ? policy.log_decay(bh, first + 2 * lane + 1) : 0.0f;
  float sum = x0 + x1;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const float below = __shfl_up_sync(0xffffffffu, sum, offset);
    if (lane >= offset) sum += below;
  }
  // The lane below's inclusive sum, not sum - (x0 + x1): exact, so b is flat over the padding.
  const float below = __shfl_up_sync(0xffffffffu, sum, 1);
  const float before = lane > 0 ? below : 0.0f;
  b[2 * lane] = before + x0;
  b[2 * lane + 1] = sum;
}

}  // namespace arch_bench
