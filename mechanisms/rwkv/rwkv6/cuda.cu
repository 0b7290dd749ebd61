// CUDA scan of RWKV-6 (Finch): the decode step and the recurrent prefill (cuda_plan.hpp has the
// geometry). Per token, with S [key i][value j], decay w_i = exp(max(-exp(d_i), -100)) (as the CPU
// kernels clamp it) and bonus u:
//   o_j = sum_i r_i S_ij + (sum_i r_i u_i k_i) v_j,   S_ij = w_i S_ij + k_i v_j
// Each lane holds its key rows of one value column in registers for the whole call; the bonus term
// is folded into the same per-lane sum as the state read-out, so one column_sum per token gives o_j.
// fp32 FMAs on SIMT cores; bf16 storage widens on load. expf (not __expf) keeps fp32 within 1e-4.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/matrix_scan.cuh"
#include "mechanisms/rwkv/scan_instances.cuh"

namespace arch_bench {

namespace {

// One block per SM is the bound ptxas is given: with the default heuristics it capped the 8-row
// lanes at 56 registers and spilled 4 bytes.
template <class T, int kRows>
__global__ void __launch_bounds__(kRwkvCudaThreads, 1)
    rwkv6_scan_kernel(const T* __restrict__ r, const T* __restrict__ k, const T* __restrict__ v,
                      const T* __restrict__ d, const float* __restrict__ u, float* __restrict__ state,
                      T* __restrict__ out, std::int64_t tokens, int dim, std::int64_t heads, int column_blocks,
                      int columns_per_block, int token_tile) {
  extern __shared__ float staged[];  // [token_tile][kRwkv6StagedCount][dim]
  const RwkvScanThread at = rwkv_scan_thread(blockIdx.x, threadIdx.x, column_blocks, columns_per_block);
  const bool live = at.column < dim;
  float* S = state + at.bh * dim * dim;
  const float* u_row = u + (at.bh % heads) * dim;
  advance_tokens(at.bh * tokens * dim, r, k, v, d, out);  // to this head's first token
  float s[kRows];
  load_column(S, dim, at, s);

  scan_token_tiles(
      staged, kRwkv6StagedCount * dim, tokens, dim, token_tile,
      [&](float* token, int src, int c) {
        const float rc = load_float(r[src]), kc = load_float(k[src]);
        token[kRwkv6StagedR * dim + c] = rc;
        token[kRwkv6StagedK * dim + c] = kc;
        token[kRwkv6StagedW * dim + c] = expf(fmaxf(-expf(load_float(d[src])), -100.0f));
        token[kRwkv6StagedBonus * dim + c] = rc * u_row[c] * kc;
        token[kRwkv6StagedV * dim + c] = load_float(v[src]);
      },
      [&](const float* token, int tt) {
        const float vj = live ? token[kRwkv6StagedV * dim + at.column] : 0.0f;
        float partial = 0.0f;
        for_lane_key_rows<kRows>(at, dim, [&](int q, int i) {
          partial = fmaf(token[kRwkv6StagedR * dim + i], s[q], partial);
          partial = fmaf(token[kRwkv6StagedBonus * dim + i], vj, partial);
          s[q] = fmaf(token[kRwkv6StagedW * dim + i], s[q], token[kRwkv6StagedK * dim + i] * vj);
        });
        store_column_sum(out + tt * dim, dim, at, partial);
      },
      [&](int advance) { advance_tokens(advance, r, k, v, d, out); });
  store_column(S, dim, at, s);
}

}  // namespace

template <class T>
void launch_rwkv6_scan(const RwkvScanPlan& plan, const RwkvParameters& params, const RwkvTokens<T>& x, float* state,
                       T* out, CUstream_st* stream) {
  using D = typename DeviceStorage<T>::type;
  if (plan.tokens == 0 || plan.batch_heads == 0) return;  // nothing to fold in; S unchanged
  with_row_count(plan.rows_per_lane, [&]<int kRows>() {
    rwkv6_scan_kernel<D, kRows><<<static_cast<unsigned>(plan.blocks), plan.threads, plan.shared_bytes, stream>>>(
        reinterpret_cast<const D*>(x.r), reinterpret_cast<const D*>(x.k), reinterpret_cast<const D*>(x.v),
        reinterpret_cast<const D*>(x.decay), params.u, state, reinterpret_cast<D*>(out), plan.tokens, plan.dim,
        plan.heads, plan.column_blocks, plan.columns_per_block, plan.token_tile);
  });
  check_launch("rwkv6_scan_kernel");
}

ARCH_BENCH_RWKV_SCAN_INSTANCES(launch_rwkv6_scan)

}  // namespace arch_bench
