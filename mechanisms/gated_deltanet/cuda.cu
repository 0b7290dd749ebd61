// CUDA kernels of Gated DeltaNet: the column recurrence (common/column_recurrence_plan.hpp) as the
// decode step (one token) and as the sequential prefill (L tokens); and the operands of the bf16
// chunkwise prefill on tensor cores (common/chunk_delta_rule.cuh). The delta rule needs S^T k, a
// sum over the rows of each column, before it can write: with a column's rows in the registers of
// one lane group that sum is a few shuffles and S never leaves the registers between tokens, so it
// is read and written once per launch. fp32 FMA on SIMT cores (fp32 storage must meet 1e-4).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/chunk_delta_rule.cuh"
#include "mechanisms/common/chunk_token_operands.cuh"
#include "mechanisms/common/column_recurrence.cuh"
#include "mechanisms/gated_deltanet/cpu.hpp"
#include "mechanisms/gated_deltanet/cuda.hpp"
#include "mechanisms/gated_deltanet/reference.hpp"

namespace arch_bench {

namespace {

constexpr float kNormEps = static_cast<float>(kGatedDeltaNetNormEps);

// Row t of a staged [n][padded] tile times scale / sqrt(row . row + eps), one warp per row (the
// padding is 0 and adds nothing), as the CPU kernels' normalise() rounds it: the factor first.
__device__ __forceinline__ void normalise_staged_rows(float* rows, int n, int padded, float scale) {
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  for (int t = warp; t < n; t += warps) {
    float* row = rows + t * padded;
    float sum = 0.0f;
    for (int i = lane; i < padded; i += 32) sum = fmaf(row[i], row[i], sum);
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const float factor = scale / sqrtf(sum + kNormEps);
    for (int i = lane; i < padded; i += 32) row[i] *= factor;
  }
}

template <class T>
__global__ void __launch_bounds__(kColumnMaxThreads, 1)
    gated_deltanet_recurrence_kernel(ColumnRecurrencePlan plan, const T* __restrict__ q, const T* __restrict__ k,
                                     const T* __restrict__ v, const float* __restrict__ g,
                                     const float* __restrict__ beta, float* __restrict__ state,
                                     T* __restrict__ out) {
  extern __shared__ float shared[];
  float* q_stage = shared;                                          // [stage][padded_rows], normalised
  float* k_stage = q_stage + plan.stage_tokens * plan.padded_rows;  // [stage][padded_rows], normalised
  float* v_stage = k_stage + plan.stage_tokens * plan.padded_rows;  // [stage][columns_per_block]
  float* gates = v_stage + plan.stage_tokens * plan.columns_per_block;  // [stage][alpha, beta]

  const ColumnLane at = column_lane(plan);
  const int first_column = at.column_block * plan.columns_per_block;
  const float query_scale = 1.0f / sqrtf(static_cast<float>(plan.dk));
  const ColumnHead<T> head = column_head(plan, at, q, k, v, out, state);
  const float* g_head = g + at.bh * plan.tokens;
  const float* beta_head = beta + at.bh * plan.tokens;

  walk_column_tokens(
      q_stage, k_stage, v_stage, head, plan, at, first_column,
      [&](std::int64_t t0, int n) {
        for (int t = threadIdx.x; t < n; t += blockDim.x) {
          gates[2 * t] = expf(g_head[t0 + t]);  // expf, not __expf: alpha^L compounds its error
          gates[2 * t + 1] = beta_head[t0 + t];
        }
      },
      [&](int n) {
        normalise_staged_rows(q_stage, n, plan.padded_rows, query_scale);
        normalise_staged_rows(k_stage, n, plan.padded_rows, 1.0f);
        __syncthreads();
      },
      [&](float(&s)[kColumnRowsPerLane], std::int64_t t0, int t) {
        const float* q_row = q_stage + t * plan.padded_rows + at.group;
        const float* k_row = k_stage + t * plan.padded_rows + at.group;
        const float value = v_stage[t * plan.columns_per_block + at.local_column];
        const float alpha = gates[2 * t], strength = gates[2 * t + 1];
        // S^T k before the write: what the state returns for k now, summed over the column's lanes.
        // Four partial sums in both reductions: a chain of 16 dependent FMAs each otherwise, and a
        // token's latency is the whole prefill's critical path (a column's tokens are sequential).
        float partial[4] = {};
#pragma unroll
        for (int m = 0; m < kColumnRowsPerLane; ++m) {
          partial[m % 4] = fmaf(k_row[m * plan.lanes_per_column], s[m], partial[m % 4]);
        }
        const float recalled =
            column_sum((partial[0] + partial[1]) + (partial[2] + partial[3]), plan.columns_per_warp);
        // alpha (I - beta k k^T) S + beta k v^T = alpha S + k u^T with u = beta (v - alpha S^T k).
        const float update = strength * (value - alpha * recalled);
        decay_write_read(s, alpha, k_row, update, q_row, plan, at, head.out + (t0 + t) * plan.dv + at.column);
      });
}

// Gated DeltaNet's operands for the chunkwise prefill: the tokens' q, k, v as they come
// (ChunkTokenOperands); g and beta [bh, L] fp32. q and k are L2-normalised in fp32 as the
// recurrence normalises them (the factor first; q also scaled by dk^-1/2).
struct GatedDeltaNetChunkOperands : ChunkTokenOperands {
  const float* g;
  const float* beta;
  float query_scale;

  // Token t's rows, as the prepare kernel stages a chunk's (its rows are consecutive; dk and dv
  // multiples of 16 keep every row 16-byte aligned in cudaMalloc'd memory).
  __device__ __forceinline__ const __nv_bfloat16* q_row(std::int64_t bh, std::int64_t t) const {
    return q + (bh * tokens + t) * dk;
  }
  __device__ __forceinline__ const __nv_bfloat16* k_row(std::int64_t bh, std::int64_t t) const {
    return k + (bh * tokens + t) * dk;
  }
  __device__ __forceinline__ const __nv_bfloat16* v_row(std::int64_t bh, std::int64_t t) const {
    return v + (bh * tokens + t) * dv;
  }
  __device__ __forceinline__ float log_decay(std::int64_t bh, std::int64_t t) const { return g[bh * tokens + t]; }
  __device__ __forceinline__ float beta_at(std::int64_t bh, std::int64_t t) const { return beta[bh * tokens + t]; }
  __device__ __forceinline__ float query_factor(float sum) const { return query_scale / sqrtf(sum + kNormEps); }
  __device__ __forceinline__ float key_factor(float sum) const { return 1.0f / sqrtf(sum + kNormEps); }
};

}  // namespace

void configure_gated_deltanet_chunked_prefill(const ChunkDeltaRulePlan& plan) {
  configure_chunk_delta_rule<GatedDeltaNetChunkOperands>(plan);
}

void launch_gated_deltanet_chunked_prefill(const ChunkDeltaRulePlan& plan, const bf16* q, const bf16* k, const bf16* v,
                                           const float* g, const float* beta, float* state, bf16* out,
                                           bf16* workspace, float* chunk_log_decay, CUstream_st* stream) {
  const GatedDeltaNetChunkOperands operands{{reinterpret_cast<const __nv_bfloat16*>(q),
                                             reinterpret_cast<const __nv_bfloat16*>(k),
                                             reinterpret_cast<const __nv_bfloat16*>(v),
                                             reinterpret_cast<__nv_bfloat16*>(out), plan.tokens, plan.dk, plan.dv},
                                            g,
                                            beta,
                                            1.0f / sqrtf(static_cast<float>(plan.dk))};
  launch_chunk_delta_rule(plan, operands, state, reinterpret_cast<__nv_bfloat16*>(workspace), chunk_log_decay, stream);
}

template <class T>
void launch_gated_deltanet_recurrence(const ColumnRecurrencePlan& plan, const T* q, const T* k, const T* v,
                                      const float* g, const float* beta, float* state, T* out, CUstream_st* stream) {
  using D = typename DeviceStorage<T>::type;
  if (plan.tokens == 0 || plan.blocks == 0) return;  // nothing to fold in; S unchanged
  gated_deltanet_recurrence_kernel<D>
      <<<static_cast<unsigned>(plan.blocks), plan.threads, plan.shared_bytes, stream>>>(
          plan, reinterpret_cast<const D*>(q), reinterpret_cast<const D*>(k), reinterpret_cast<const D*>(v), g, beta,
          state, reinterpret_cast<D*>(out));
  check_launch("gated_deltanet_recurrence_kernel");
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                              \
  template void launch_gated_deltanet_recurrence<T>(const ColumnRecurrencePlan&, const T*, const T*, const T*,  \
                                                    const float*, const float*, float*, T*, CUstream_st*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
