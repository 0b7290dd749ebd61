#pragma once
// The chunkwise tensor-core prefill of scalar-decay linear attention, written once for retnet and
// Mamba-2's SSD (the algebra and the geometry: chunk_scalar_decay_plan.hpp). A mechanism supplies
// an operand policy, a struct of force-inlined device functions:
//   float log_decay(std::int64_t bh, std::int64_t t)        log a_t (<= 0) of head bh, token t
//   __nv_bfloat16 q_at(bh, t, i), k_at(bh, t, i), v_at(bh, t, j)   the token's operands, i < dk, j < dv
//   void store(bh, t, j, float o)                           o_t[j] (the mechanism's epilogue)
// or, instead of store, for an epilogue that needs more than its own column of O:
//   void store_from_row(bh, t, j, const float* row)         o_t[j] from row t of O (all dv columns);
//                                                           linear attention divides by its
//                                                           normaliser column
// and launches the three kernels below in order on one stream (launch_chunk_scalar_decay), or, where
// the plan's state_pass is fused, the fused state pass (chunk_scalar_decay_fused.cuh) in place of
// kernels (1) and (2) and then kernel (3). Every
// index a policy is called with is inside the sequence: a tail chunk is zero-padded in shared
// memory, never read past L.
//
// Products on tensor cores: wmma 16 x 16 x 16, bf16 operands, fp32 accumulators. The operands that
// are not bf16 already (V scaled by a decay, the masked scores, diag(exp(b)) Q) are rounded to bf16
// once, a relative 2^-9 per element, well inside bf16's 1e-2. The per-chunk states go through
// global memory in bf16 (each chunk's own U_c, then the state entering it, which kernel (3) uses
// as a bf16 operand anyway): half the bytes of fp32, the traffic that bounds these kernels
// (chunk_scalar_decay_plan.hpp has the estimate). The decays and the state carried across chunks
// stay fp32, so U_c's rounding is added once per chunk, not compounded.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/chunk_log_decay.cuh"
#include "mechanisms/common/chunk_scalar_decay_fused.cuh"
#include "mechanisms/common/chunk_scalar_decay_plan.hpp"
#include "mechanisms/common/chunk_state_prefix.cuh"
#include "mechanisms/common/chunk_wmma.cuh"
#include "mechanisms/common/dynamic_shared_memory.cuh"

namespace arch_bench {

namespace scalar_decay_detail {

using chunk_wmma::Accumulator;  // and the block index and tile panels (chunk_wmma.cuh) the kernels call
using chunk_wmma::head_index_of_block;
using chunk_wmma::HeadIndex;
using chunk_wmma::kF;
using chunk_wmma::mma_ab_panel;
using chunk_wmma::mma_abt_panel;
using chunk_wmma::mma_atb_panel;
using chunk_wmma::store_tile;
using chunk_wmma::zero_accumulator;

inline constexpr int kC = kScalarDecayChunk;
static_assert(kScalarDecayFragment == kF, "the plan's fragment is chunk_wmma's");
static_assert(kC == kLogDecayScanTokens, "cumulative_log_decay scans 64 tokens");
inline constexpr int kWarps = kScalarDecayThreads / 32;

// Rows [0, C) x columns [0, width) of a chunk operand into dst [C][ld] (bf16); rows >= rows are 0.
template <class Load>
__device__ __forceinline__ void stage_operand(__nv_bfloat16* __restrict__ dst, int ld, int width, int rows,
                                              Load load) {
  for (int e = threadIdx.x; e < kC * width; e += blockDim.x) {
    const int m = e / width, i = e % width;
    dst[m * ld + i] = m < rows ? load(m, i) : __float2bfloat16_rn(0.0f);
  }
}

}  // namespace scalar_decay_detail

// (1) One block per (head, chunk): U_c = K_c^T diag(exp(b_last - b_j)) V_c into the workspace
// (bf16, [dk][dv] row-major) and b_last into chunk_log_decay. Warp w computes the 16 x 16 tiles
// w, w + 8, ... of U (dk/16 x dv/16 of them), each through its own fp32 staging tile in shared
// memory (wmma stores fp32 accumulators only), rounded to bf16 on the way out.
template <class Policy>
__global__ void __launch_bounds__(kScalarDecayThreads)
    scalar_decay_chunk_state_kernel(ChunkScalarDecayPlan plan, Policy policy, __nv_bfloat16* __restrict__ chunk_states,
                                    float* __restrict__ chunk_log_decay) {
  using namespace scalar_decay_detail;
  extern __shared__ __align__(128) unsigned char shared[];
  auto* k_tile = reinterpret_cast<__nv_bfloat16*>(shared + plan.state_layout.k);
  auto* v_tile = reinterpret_cast<__nv_bfloat16*>(shared + plan.state_layout.v);
  auto* b = reinterpret_cast<float*>(shared + plan.state_layout.decay);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  float* u_stage = reinterpret_cast<float*>(shared + plan.state_layout.u) + warp * kF * kF;

  const HeadIndex hc = head_index_of_block(plan.chunks);  // block = bh * chunks + chunk
  const std::int64_t bh = hc.bh, chunk = hc.index;
  const std::int64_t first = chunk * kC;
  const int rows = scalar_decay_chunk_rows(plan.tokens, chunk);

  cumulative_log_decay(policy, b, bh, first, rows);
  stage_operand(k_tile, plan.ld_k, plan.dk, rows, [&](int m, int i) { return policy.k_at(bh, first + m, i); });
  __syncthreads();  // b is complete
  const float b_last = b[kC - 1];
  // exp(b_last - b_j) <= 1: a later token has decayed less by the chunk's end.
  stage_operand(v_tile, plan.ld_v, plan.dv, rows, [&](int m, int j) {
    return __float2bfloat16_rn(__bfloat162float(policy.v_at(bh, first + m, j)) * expf(b_last - b[m]));
  });
  __syncthreads();

  __nv_bfloat16* u = chunk_states + scalar_decay_state_offset(plan, bh, chunk);
  const int tiles_j = plan.dv / kF;
  const int tiles = (plan.dk / kF) * tiles_j;
  for (int tile = warp; tile < tiles; tile += kWarps) {
    const int ti = tile / tiles_j, tj = tile % tiles_j;
    Accumulator acc = zero_accumulator();
    mma_atb_panel(acc, k_tile, plan.ld_k, v_tile, plan.ld_v, ti, tj, kC / kF);  // K^T V
    store_tile(u_stage, acc, kF);
    __syncwarp();
    // Lane l rounds row l / 2, columns 8 (l % 2) .. + 8 of the tile and stores them as one 16-byte
    // vector: the element offset is a multiple of 8 (dk * dv, dv and the tile's column are
    // multiples of 16), so the address is 16-byte aligned.
    const int r = lane / 2, c0 = (lane % 2) * 8;
    alignas(16) __nv_bfloat162 pairs[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) pairs[p] = __floats2bfloat162_rn(u_stage[r * kF + c0 + 2 * p], u_stage[r * kF + c0 + 2 * p + 1]);
    *reinterpret_cast<uint4*>(u + static_cast<std::int64_t>(ti * kF + r) * plan.dv + tj * kF + c0) =
        *reinterpret_cast<const uint4*>(pairs);
    __syncwarp();  // the next tile's store overwrites the staging tile
  }
  if (threadIdx.x == 0) chunk_log_decay[bh * plan.chunks + chunk] = b_last;
}

// (2) One thread per pair of adjacent elements (2e, 2e + 1) of a head's S, carried over the chunks
// with b_c = b_last,c (chunk_state_prefix.cuh). (A template, though nothing varies, so that the
// header defines it in every .cu that includes it without a duplicate symbol.)
template <int kBatch = 8>
__global__ void __launch_bounds__(kScalarDecayThreads)
    scalar_decay_chunk_prefix_kernel(ChunkScalarDecayPlan plan, __nv_bfloat162* __restrict__ chunk_states,
                                     const float* __restrict__ chunk_log_decay, float* __restrict__ state) {
  carry_state_pair_over_chunks<kBatch, kScalarDecayThreads>(
      plan.prefix_blocks_per_head, static_cast<std::int64_t>(plan.dk) * plan.dv / 2, plan.chunks, state,
      [&](std::int64_t bh, std::int64_t e) { return chunk_states + scalar_decay_state_offset(plan, bh, 0) / 2 + e; },
      [&](std::int64_t bh, std::int64_t) {
        const float* decay = chunk_log_decay + bh * plan.chunks;
        return [=](std::int64_t chunk) { return decay[chunk]; };
      });
}

// (3) One block per (head, chunk): O = ((Q K^T) . M) V + diag(exp(b_i)) Q S_c, S_c being the state
// entering the chunk (kernel (2)). Scores: the 4 x 4 tiles of Q K^T on or below the diagonal
// (those above are wholly masked and never computed), warp w taking tiles w and w + 8. Outputs:
// the 4 x dv/16 tiles of O, warp w taking w, w + 8, ...; row tile ti sums P over key tiles
// kk <= ti only (P is block lower-triangular) and then Q S over dk.
template <class Policy>
__global__ void __launch_bounds__(kScalarDecayThreads)
    scalar_decay_chunk_output_kernel(ChunkScalarDecayPlan plan, Policy policy,
                                     const __nv_bfloat16* __restrict__ chunk_states) {
  using namespace scalar_decay_detail;
  extern __shared__ __align__(128) unsigned char shared[];
  const ScalarDecayOutputLayout& at = plan.output_layout;
  auto* q_tile = reinterpret_cast<__nv_bfloat16*>(shared + at.q);
  auto* k_tile = reinterpret_cast<__nv_bfloat16*>(shared + at.k);
  auto* v_tile = reinterpret_cast<__nv_bfloat16*>(shared + at.v);
  auto* s_tile = reinterpret_cast<__nv_bfloat16*>(shared + at.s);
  auto* p_tile = reinterpret_cast<__nv_bfloat16*>(shared + at.p);
  auto* acc_tile = reinterpret_cast<float*>(shared + at.acc);
  auto* b = reinterpret_cast<float*>(shared + at.decay);

  const HeadIndex hc = head_index_of_block(plan.chunks);  // block = bh * chunks + chunk
  const std::int64_t bh = hc.bh, chunk = hc.index;
  const std::int64_t first = chunk * kC;
  const int rows = scalar_decay_chunk_rows(plan.tokens, chunk);
  const int warp = static_cast<int>(threadIdx.x / 32);

  cumulative_log_decay(policy, b, bh, first, rows);
  stage_operand(q_tile, plan.ld_k, plan.dk, rows, [&](int m, int i) { return policy.q_at(bh, first + m, i); });
  stage_operand(k_tile, plan.ld_k, plan.dk, rows, [&](int m, int i) { return policy.k_at(bh, first + m, i); });
  stage_operand(v_tile, plan.ld_v, plan.dv, rows, [&](int m, int j) { return policy.v_at(bh, first + m, j); });
  // The bf16 state entering the chunk, a pair at a time (dv and ld_v are even: 4-byte aligned).
  const auto* s_in = reinterpret_cast<const __nv_bfloat162*>(chunk_states + scalar_decay_state_offset(plan, bh, chunk));
  for (int e = threadIdx.x; e < plan.dk * plan.dv / 2; e += blockDim.x) {
    const int i = 2 * e / plan.dv, j = 2 * e % plan.dv;
    *reinterpret_cast<__nv_bfloat162*>(s_tile + i * plan.ld_v + j) = s_in[e];
  }
  __syncthreads();

  // Scores A = Q K^T, fp32, into acc_tile [C][ld_acc] (only tiles with tj <= ti are written).
  constexpr int kTiles = kC / kF;
  for (int tile = warp; tile < kTiles * kTiles; tile += kWarps) {
    const int ti = tile / kTiles, tj = tile % kTiles;
    if (tj > ti) continue;
    Accumulator acc = zero_accumulator();
    mma_abt_panel(acc, q_tile, plan.ld_k, k_tile, plan.ld_k, ti, tj, plan.dk / kF);  // Q K^T
    store_tile(acc_tile + ti * kF * plan.ld_acc + tj * kF, acc, plan.ld_acc);
  }
  __syncthreads();

  // The causal decay mask, inclusive of the diagonal: P_ij = A_ij exp(b_i - b_j) for j <= i (<= 1,
  // b falls along the chunk), 0 above, where A was never written and the exponent could overflow.
  for (int e = threadIdx.x; e < kC * kC; e += blockDim.x) {
    const int i = e / kC, j = e % kC;
    const float p = j <= i ? acc_tile[i * plan.ld_acc + j] * expf(b[i] - b[j]) : 0.0f;
    p_tile[i * plan.ld_p + j] = __float2bfloat16_rn(p);
  }
  // Q is read only by the scores above: scale it in place to diag(exp(b_i)) Q for the inter-chunk
  // term (padded rows stay 0).
  for (int e = threadIdx.x; e < kC * plan.dk; e += blockDim.x) {
    const int i = e / plan.dk, c = e % plan.dk;
    __nv_bfloat16& x = q_tile[i * plan.ld_k + c];
    x = __float2bfloat16_rn(__bfloat162float(x) * expf(b[i]));
  }
  __syncthreads();  // the scores in acc_tile are consumed: O may overwrite them

  const int tiles_j = plan.dv / kF;
  for (int tile = warp; tile < kTiles * tiles_j; tile += kWarps) {
    const int ti = tile / tiles_j, tj = tile % tiles_j;
    Accumulator acc = zero_accumulator();
    mma_ab_panel(acc, p_tile, plan.ld_p, v_tile, plan.ld_v, ti, tj, ti + 1);              // intra-chunk: P V
    mma_ab_panel(acc, q_tile, plan.ld_k, s_tile, plan.ld_v, ti, tj, plan.dk / kF);  // inter-chunk: diag(exp(b)) Q S_c
    store_tile(acc_tile + ti * kF * plan.ld_acc + tj * kF, acc, plan.ld_acc);
  }
  __syncthreads();

  for (int e = threadIdx.x; e < rows * plan.dv; e += blockDim.x) {  // rows past the sequence are dropped
    const int i = e / plan.dv, j = e % plan.dv;
    if constexpr (requires { policy.store_from_row(bh, first, j, acc_tile); }) {
      policy.store_from_row(bh, first + i, j, acc_tile + i * plan.ld_acc);
    } else {
      policy.store(bh, first + i, j, acc_tile[i * plan.ld_acc + j]);
    }
  }
}

// Once per plan, before the first launch (dynamic_shared_memory.cuh): lets each kernel the plan
// launches take its shared memory past 48 KiB.
template <class Policy>
void configure_chunk_scalar_decay(const ChunkScalarDecayPlan& plan) {
  if (plan.state_pass == ScalarDecayStatePass::fused) {
    allow_dynamic_shared_memory(scalar_decay_fused_state_kernel<Policy>, plan.fused_layout.bytes);
  } else {
    allow_dynamic_shared_memory(scalar_decay_chunk_state_kernel<Policy>, plan.state_layout.bytes);
  }
  allow_dynamic_shared_memory(scalar_decay_chunk_output_kernel<Policy>, plan.output_layout.bytes);
}

// The plan's kernels in order on `stream`, each launch checked: the state pass (fused, or kernels
// (1) and (2)), then kernel (3). `state` [batch_heads][dk][dv] (fp32) holds the state before the
// first token and receives the state after the last; `chunk_states` (plan.workspace_state_elements
// floats, which hold the bf16 states two to a float) and `chunk_log_decay`
// (plan.workspace_decay_elements floats: none, and unused, when fused) are the plan's workspace.
template <class Policy>
void launch_chunk_scalar_decay(const ChunkScalarDecayPlan& plan, const Policy& policy, float* state,
                               float* chunk_states, float* chunk_log_decay, CUstream_st* stream) {
  if (plan.tokens == 0 || plan.batch_heads == 0) return;  // nothing to fold in; S unchanged
  auto* states = reinterpret_cast<__nv_bfloat16*>(chunk_states);
  if (plan.state_pass == ScalarDecayStatePass::fused) {
    scalar_decay_fused_state_kernel<Policy>
        <<<static_cast<unsigned>(plan.fused_blocks), plan.threads, plan.fused_layout.bytes, stream>>>(plan, policy,
                                                                                                       states, state);
    check_launch("scalar_decay_fused_state_kernel");
  } else {
    scalar_decay_chunk_state_kernel<Policy>
        <<<static_cast<unsigned>(plan.state_blocks), plan.threads, plan.state_layout.bytes, stream>>>(
            plan, policy, states, chunk_log_decay);
    check_launch("scalar_decay_chunk_state_kernel");
    scalar_decay_chunk_prefix_kernel<><<<static_cast<unsigned>(plan.prefix_blocks), plan.threads, 0, stream>>>(
        plan, reinterpret_cast<__nv_bfloat162*>(states), chunk_log_decay, state);
    check_launch("scalar_decay_chunk_prefix_kernel");
  }
  scalar_decay_chunk_output_kernel<Policy>
      <<<static_cast<unsigned>(plan.output_blocks), plan.threads, plan.output_layout.bytes, stream>>>(
          plan, policy, states);
  check_launch("scalar_decay_chunk_output_kernel");
}

}  // namespace arch_bench
