// CUDA kernel of multi-scale retention: the column recurrence (common/column_recurrence_plan.hpp)
// as the decode step (one token) and as the recurrent prefill (L tokens). Each lane keeps its 16
// rows of one value column of S in registers for the whole launch, so S is read and written once
// however many tokens the launch folds in; fp32 FMA on SIMT cores (fp32 storage must meet 1e-4).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/chunk_scalar_decay.cuh"
#include "mechanisms/common/chunk_token_operands.cuh"
#include "mechanisms/common/column_recurrence.cuh"
#include "mechanisms/retnet/cuda.hpp"

namespace arch_bench {

namespace {

template <class T>
__global__ void __launch_bounds__(kColumnMaxThreads, 1)
    retnet_recurrence_kernel(ColumnRecurrencePlan plan, int heads, const T* __restrict__ q,
                             const T* __restrict__ k, const T* __restrict__ v, float* __restrict__ state,
                             T* __restrict__ out) {
  extern __shared__ float shared[];
  float* q_stage = shared;                                      // [stage][padded_rows]
  float* k_stage = q_stage + plan.stage_tokens * plan.padded_rows;  // [stage][padded_rows]
  float* v_stage = k_stage + plan.stage_tokens * plan.padded_rows;  // [stage][columns_per_block]

  const ColumnLane at = column_lane(plan);
  const int first_column = at.column_block * plan.columns_per_block;
  // retnet_gamma(h) rounded to fp32: 1 - 2^(-5-h) is exact in fp64 and ldexpf is exact, so the
  // fp32 subtraction rounds the same value the host's cast does.
  const float gamma = 1.0f - ldexpf(1.0f, -5 - static_cast<int>(static_cast<unsigned>(at.bh) % static_cast<unsigned>(heads)));
  const ColumnHead<T> head = column_head(plan, at, q, k, v, out, state);

  walk_column_tokens(
      q_stage, k_stage, v_stage, head, plan, at, first_column, [](std::int64_t, int) {}, [](int) {},
      [&](float(&s)[kColumnRowsPerLane], std::int64_t t0, int t) {
        // Rows group + R m of the token's q and k: R consecutive floats per m across the group
        // (distinct banks), the same words for every column of the warp (broadcast).
        const float* q_row = q_stage + t * plan.padded_rows + at.group;
        const float* k_row = k_stage + t * plan.padded_rows + at.group;
        const float value = v_stage[t * plan.columns_per_block + at.local_column];
        decay_write_read(s, gamma, k_row, value, q_row, plan, at, head.out + (t0 + t) * plan.dv + at.column);
      });
}

// retnet's operands for the chunkwise prefill: the tokens' q, k, v as they come (ChunkTokenOperands);
// the decay is gamma_h for every token, log gamma_h = log1p(-2^(-5-h)) (accurate where gamma is
// near 1; an underflowing 2^(-5-h) gives 0, gamma = 1, as the fp32 recurrence's 1 - 0 does).
struct RetNetChunkOperands : ChunkTokenOperands {
  int heads;

  __device__ __forceinline__ float log_decay(std::int64_t bh, std::int64_t) const {
    const int h = static_cast<int>(static_cast<unsigned>(bh) % static_cast<unsigned>(heads));
    return log1pf(-ldexpf(1.0f, -5 - h));
  }
};

}  // namespace

void configure_retnet_chunked_prefill(const ChunkScalarDecayPlan& plan) {
  configure_chunk_scalar_decay<RetNetChunkOperands>(plan);
}

void launch_retnet_chunked_prefill(const ChunkScalarDecayPlan& plan, std::int64_t heads, const bf16* q, const bf16* k,
                                   const bf16* v, float* state, bf16* out, float* chunk_states,
                                   float* chunk_log_decay, CUstream_st* stream) {
  const RetNetChunkOperands operands{{reinterpret_cast<const __nv_bfloat16*>(q),
                                      reinterpret_cast<const __nv_bfloat16*>(k),
                                      reinterpret_cast<const __nv_bfloat16*>(v),
                                      reinterpret_cast<__nv_bfloat16*>(out), plan.tokens, plan.dk, plan.dv},
                                     static_cast<int>(heads)};
  launch_chunk_scalar_decay(plan, operands, state, chunk_states, chunk_log_decay, stream);
}

template <class T>
void launch_retnet_recurrence(const ColumnRecurrencePlan& plan, std::int64_t heads, const T* q, const T* k,
                              const T* v, float* state, T* out, CUstream_st* stream) {
  using D = typename DeviceStorage<T>::type;
  if (plan.tokens == 0 || plan.blocks == 0) return;  // nothing to fold in; S unchanged
  retnet_recurrence_kernel<D><<<static_cast<unsigned>(plan.blocks), plan.threads, plan.shared_bytes, stream>>>(
      plan, static_cast<int>(heads), reinterpret_cast<const D*>(q), reinterpret_cast<const D*>(k),
      reinterpret_cast<const D*>(v), state, reinterpret_cast<D*>(out));
  check_launch("retnet_recurrence_kernel");
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                              \
  template void launch_retnet_recurrence<T>(const ColumnRecurrencePlan&, std::int64_t, const T*, const T*,      \
                                            const T*, float*, T*, CUstream_st*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
