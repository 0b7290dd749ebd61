// linear_attention's bf16 prefill on tensor cores: the shared chunkwise scalar-decay prefill
// (common/chunk_scalar_decay.cuh) with a_t = 1, phi applied as the operands are loaded, and the
// normaliser z carried as an extra value column (cuda_plan.hpp says why). (S, z) are packed into
// the extended state [S | z | 0] before the three kernels and unpacked after, so the decode step
// and the SIMT prefill continue from the same buffers. Compiled, not yet run on a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/chunk_scalar_decay.cuh"
#include "mechanisms/common/chunk_token_operands.cuh"
#include "mechanisms/linear_attention/cuda.hpp"
#include "mechanisms/linear_attention/cuda_feature_map.cuh"

namespace arch_bench {

namespace {

// The tokens' q/k/v/out (ChunkTokenOperands); dv is the head's, the plan's is dv + 16. The policy
// stores from the whole row of O (store_from_row), never the base's store.
struct LinearAttentionChunkOperands : ChunkTokenOperands {
  FeatureMap map;

  // No decay: b stays 0 and every exp(b_i - b_j) is exactly 1.
  __device__ __forceinline__ float log_decay(std::int64_t, std::int64_t) const { return 0.0f; }
  // phi in fp32, rounded once to the bf16 operand (2^-9 relative).
  __device__ __forceinline__ __nv_bfloat16 q_at(std::int64_t bh, std::int64_t t, int i) const {
    return __float2bfloat16_rn(phi(map, __bfloat162float(ChunkTokenOperands::q_at(bh, t, i))));
  }
  __device__ __forceinline__ __nv_bfloat16 k_at(std::int64_t bh, std::int64_t t, int i) const {
    return __float2bfloat16_rn(phi(map, __bfloat162float(ChunkTokenOperands::k_at(bh, t, i))));
  }
  // [v_t | 1 | 0 ...]: column dv of the state accumulates z, of the output phi(q)^T z.
  __device__ __forceinline__ __nv_bfloat16 v_at(std::int64_t bh, std::int64_t t, int j) const {
    if (j < dv) return ChunkTokenOperands::v_at(bh, t, j);
    return __float2bfloat16_rn(j == dv ? 1.0f : 0.0f);
  }
  // o_t[j] = (phi(q)^T S)_j / phi(q)^T z; the padding columns are not outputs.
  __device__ __forceinline__ void store_from_row(std::int64_t bh, std::int64_t t, int j, const float* row) const {
    if (j < dv) out[(bh * tokens + t) * dv + j] = __float2bfloat16_rn(row[j] / row[dv]);
  }
};

// Grid-stride loops over the extended state [bh][dk][dv + 16]: element e is (bh, i, c) with
// c = e % (dv + 16); column dv is z, columns past it are 0.
__global__ void __launch_bounds__(kScalarDecayThreads)
    linear_attention_pack_state_kernel(const float* __restrict__ state, const float* __restrict__ normalizer,
                                       float* __restrict__ extended, std::int64_t rows, int dv) {
  const int width = dv + kLinearTensorCoreNormaliserColumns;
  const std::int64_t n = rows * width;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = e / width;  // bh * dk + i
    const int c = static_cast<int>(e % width);
    extended[e] = c < dv ? state[row * dv + c] : (c == dv ? normalizer[row] : 0.0f);
  }
}

__global__ void __launch_bounds__(kScalarDecayThreads)
    linear_attention_unpack_state_kernel(const float* __restrict__ extended, float* __restrict__ state,
                                         float* __restrict__ normalizer, std::int64_t rows, int dv) {
  const int width = dv + kLinearTensorCoreNormaliserColumns;
  const std::int64_t n = rows * width;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = e / width;
    const int c = static_cast<int>(e % width);
    if (c < dv) {
      state[row * dv + c] = extended[e];
    } else if (c == dv) {
      normalizer[row] = extended[e];
    }
  }
}

// Enough blocks to cover a small state in one pass, capped (the loops stride) far below the grid limit.
unsigned pack_blocks(std::int64_t elements) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((elements + kScalarDecayThreads - 1) / kScalarDecayThreads,
                                                        1, 4096));
}

}  // namespace

void configure_linear_attention_tensor_core_prefill(const ChunkScalarDecayPlan& plan) {
  configure_chunk_scalar_decay<LinearAttentionChunkOperands>(plan);
}

void launch_linear_attention_tensor_core_prefill(const ChunkScalarDecayPlan& plan, FeatureMap map, const bf16* q,
                                                 const bf16* k, const bf16* v, float* state, float* normalizer,
                                                 bf16* out, float* extended_state, float* chunk_states,
                                                 float* chunk_log_decay, CUstream_st* stream) {
  if (plan.tokens == 0 || plan.batch_heads == 0) return;  // nothing to fold in; (S, z) unchanged
  const int dv = plan.dv - kLinearTensorCoreNormaliserColumns;
  const std::int64_t rows = plan.batch_heads * plan.dk;
  const unsigned blocks = pack_blocks(linear_attention_extended_state_elements(plan));
  linear_attention_pack_state_kernel<<<blocks, kScalarDecayThreads, 0, stream>>>(state, normalizer, extended_state,
                                                                                  rows, dv);
  check_launch("linear_attention_pack_state_kernel");
  const LinearAttentionChunkOperands operands{{reinterpret_cast<const __nv_bfloat16*>(q),
                                               reinterpret_cast<const __nv_bfloat16*>(k),
                                               reinterpret_cast<const __nv_bfloat16*>(v),
                                               reinterpret_cast<__nv_bfloat16*>(out), plan.tokens, plan.dk, dv},
                                              map};
  launch_chunk_scalar_decay(plan, operands, extended_state, chunk_states, chunk_log_decay, stream);
  linear_attention_unpack_state_kernel<<<blocks, kScalarDecayThreads, 0, stream>>>(extended_state, state, normalizer,
                                                                                    rows, dv);
  check_launch("linear_attention_unpack_state_kernel");
}

}  // namespace arch_bench
