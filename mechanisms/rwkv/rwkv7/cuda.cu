// CUDA scan of RWKV-7 (Goose): the decode step and the recurrent prefill (cuda_plan.hpp has the
// geometry). In the kernels' column convention (rwkv7/cpu.hpp), H [key j][value i] and per token
//   u_i = sum_j a_j H_ji                       (the value the token removes, from H_{t-1})
//   H_ji = w_j H_ji + b_j u_i + k_j v_i,       o_i = sum_j r_j H_ji (from H_t)
// with w = exp(-e^{-0.5} sigmoid(w_raw)), a = -kappa, b = kappa * iclr. Each value column i evolves
// on its own: a lane holds its key rows of one column in registers for the whole call, and the two
// sums over key rows are one column_sum each per token. fp32 FMAs on SIMT cores; bf16 storage
// widens on load. expf (not __expf) keeps fp32 within 1e-4.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/matrix_scan.cuh"
#include "mechanisms/rwkv/scan_instances.cuh"

namespace arch_bench {

namespace {

// One block per SM is the bound ptxas is given: with the default heuristics it capped the 32-row
// lanes at 96 registers and spilled 8 bytes; the occupancy this costs is what d = 256 needs anyway.
template <class T, int kRows>
__global__ void __launch_bounds__(kRwkvCudaThreads, 1)
    rwkv7_scan_kernel(const T* __restrict__ r, const T* __restrict__ k, const T* __restrict__ v,
                      const T* __restrict__ w_raw, const T* __restrict__ kappa, const T* __restrict__ iclr,
                      float* __restrict__ state, T* __restrict__ out, std::int64_t tokens, int dim, int column_blocks,
                      int columns_per_block, int token_tile) {
  extern __shared__ float staged[];  // [token_tile][kRwkv7StagedCount][dim]
  const RwkvScanThread at = rwkv_scan_thread(blockIdx.x, threadIdx.x, column_blocks, columns_per_block);
  const bool live = at.column < dim;
  float* H = state + at.bh * dim * dim;
  advance_tokens(at.bh * tokens * dim, r, k, v, w_raw, kappa, iclr, out);  // to this head's first token
  float h[kRows];
  load_column(H, dim, at, h);

  constexpr float kDecayScale = 0.60653065971263342f;  // e^{-0.5}, as kRwkv7DecayScale
  scan_token_tiles(
      staged, kRwkv7StagedCount * dim, tokens, dim, token_tile,
      [&](float* token, int src, int c) {
        const float kap = load_float(kappa[src]);
        token[kRwkv7StagedR * dim + c] = load_float(r[src]);
        token[kRwkv7StagedK * dim + c] = load_float(k[src]);
        token[kRwkv7StagedW * dim + c] = expf(-kDecayScale / (1.0f + expf(-load_float(w_raw[src]))));
        token[kRwkv7StagedA * dim + c] = -kap;
        token[kRwkv7StagedB * dim + c] = kap * load_float(iclr[src]);
        token[kRwkv7StagedV * dim + c] = load_float(v[src]);
      },
      [&](const float* token, int tt) {
        const float vi = live ? token[kRwkv7StagedV * dim + at.column] : 0.0f;
        float removed = 0.0f;
        for_lane_key_rows<kRows>(
            at, dim, [&](int q, int j) { removed = fmaf(token[kRwkv7StagedA * dim + j], h[q], removed); });
        removed = column_sum(removed);
        float partial = 0.0f;
        for_lane_key_rows<kRows>(at, dim, [&](int q, int j) {
          const float x = fmaf(token[kRwkv7StagedW * dim + j], h[q],
                               fmaf(token[kRwkv7StagedB * dim + j], removed, token[kRwkv7StagedK * dim + j] * vi));
          h[q] = x;
          partial = fmaf(token[kRwkv7StagedR * dim + j], x, partial);
        });
        store_column_sum(out + tt * dim, dim, at, partial);
      },
      [&](int advance) { advance_tokens(advance, r, k, v, w_raw, kappa, iclr, out); });
  store_column(H, dim, at, h);
}

}  // namespace

template <class T>
void launch_rwkv7_scan(const RwkvScanPlan& plan, const RwkvParameters&, const RwkvTokens<T>& x, float* state, T* out,
                       CUstream_st* stream) {
  using D = typename DeviceStorage<T>::type;
  if (plan.tokens == 0 || plan.batch_heads == 0) return;  // nothing to fold in; H unchanged
  with_row_count(plan.rows_per_lane, [&]<int kRows>() {
    rwkv7_scan_kernel<D, kRows><<<static_cast<unsigned>(plan.blocks), plan.threads, plan.shared_bytes, stream>>>(
        reinterpret_cast<const D*>(x.r), reinterpret_cast<const D*>(x.k), reinterpret_cast<const D*>(x.v),
        reinterpret_cast<const D*>(x.decay), reinterpret_cast<const D*>(x.kappa), reinterpret_cast<const D*>(x.iclr),
        state, reinterpret_cast<D*>(out), plan.tokens, plan.dim, plan.column_blocks, plan.columns_per_block,
        plan.token_tile);
  });
  check_launch("rwkv7_scan_kernel");
}

ARCH_BENCH_RWKV_SCAN_INSTANCES(launch_rwkv7_scan)

}  // namespace arch_bench
