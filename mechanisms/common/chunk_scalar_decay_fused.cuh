#pragma once
// The fused state pass of the chunkwise scalar-decay prefill (chunk_scalar_decay.cuh launches it in
// place of kernels (1) and (2) where plan.state_pass is fused; the plan says when). One block per
// (head, column tile of S) walks the chunks in order and carries its dk x tile columns of S in
// fp32 wmma accumulator fragments from the first chunk to the last:
//   store S_c (the state entering chunk c) to the workspace in bf16, as kernel (3) reads it;
//   S_{c+1} = exp(b_last) S_c + K_c^T diag(exp(b_last - b_j)) V_c:
//     the fragments scaled elementwise by exp(b_last) (one scalar per head and chunk, so the
//     fragment's element layout does not matter), then K^T V' accumulated onto them by mma_sync.
// S is never rounded on the chain, only the stored entering states are (once each), where the three
// kernels round each chunk's own U_c before the prefix adds it. U_c's write and the prefix's read
// and rewrite disappear: docs/gpu-guide.md has the bytes.
//
// The next chunk's K and V (and warp 0's scan of its log-decays) are loaded into registers before
// this chunk's products and written to shared memory after them, so a step's loads are in flight
// while its tensor-core work runs. Registers, not cp.async: every policy transforms an operand as it
// loads it (linear attention's phi, Mamba-2's dt x, the decay weight exp(b_last - b_j) on V), which a
// raw global-to-shared copy cannot do. Compiled, not yet run on a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

#include "mechanisms/common/chunk_log_decay.cuh"
#include "mechanisms/common/chunk_scalar_decay_plan.hpp"
#include "mechanisms/common/chunk_wmma.cuh"

namespace arch_bench {

namespace scalar_decay_fused_detail {

inline constexpr int kC = kScalarDecayChunk;
inline constexpr int kF = chunk_wmma::kF;
inline constexpr int kWarps = kScalarDecayThreads / 32;
// How a thread walks a [C][width] operand tile a pair of adjacent elements at a time
// (scalar_decay_pair_* in chunk_scalar_decay_plan.hpp, which the CPU tests walk too): its pairs share
// one column and step by a fixed row stride, so their addresses
// are one base plus a multiple (nothing per pair survives across chunks: an index per pair,
// precomputed and held over the chunk loop, took ptxas past 128 registers).
struct PairWalk {
  int pairs_per_row;
  int rows_per_pass;
  int column;  // the pair's first element in its row (even)
  int row;
  __device__ __forceinline__ explicit PairWalk(int width)
      : pairs_per_row(width / 2),
        rows_per_pass(scalar_decay_pair_rows_per_pass(width)),
        column(scalar_decay_pair_column(width, static_cast<int>(threadIdx.x))),
        row(scalar_decay_pair_first_row(width, static_cast<int>(threadIdx.x))) {}
  // Row of pass r, or -1 where this thread has none (idle thread, or past the chunk).
  __device__ __forceinline__ int row_of(int r) const { return scalar_decay_pair_row(row, rows_per_pass, r); }
  // This walk with its fields hidden from the optimiser, once per chunk: otherwise it hoists every
  // pass's row, guard and address offset out of the chunk loop and holds them all (ptxas: 196
  // registers, 1 block per SM), where recomputing them is a few integer operations a pass.
  __device__ __forceinline__ PairWalk opaque() const {
    PairWalk w = *this;
    asm volatile("" : "+r"(w.rows_per_pass), "+r"(w.column), "+r"(w.row));
    return w;
  }
};
inline constexpr int kKeyPasses = kScalarDecayFusedKeyPasses;
inline constexpr int kValuePasses = kScalarDecayFusedValuePasses;
static_assert(kScalarDecayFusedMaxFragments * kWarps * kF * kF >= kScalarDecayFusedMaxTileElements,
              "the warps' fragments cover the largest tile of S");

// One chunk's operands on their way from global memory to shared memory, a pair to a register.
struct ChunkOperandsInFlight {
  __nv_bfloat162 k[kKeyPasses];
  __nv_bfloat162 v[kValuePasses];
};

// Issues the loads of chunk `chunk`'s K and of V's columns [j0, j0 + width): rows past the sequence
// are 0 (never loaded).
template <class Policy>
__device__ __forceinline__ void load_chunk_operands(ChunkOperandsInFlight& in, const Policy& policy,
                                                    const ChunkScalarDecayPlan& plan, const PairWalk& key_walk,
                                                    const PairWalk& value_walk, std::int64_t bh, std::int64_t chunk,
                                                    int j0) {
  const PairWalk keys = key_walk.opaque(), values = value_walk.opaque();
  const std::int64_t first = chunk * kC;
  const int rows = scalar_decay_chunk_rows(plan.tokens, chunk);
  const __nv_bfloat162 zero = __floats2bfloat162_rn(0.0f, 0.0f);
#pragma unroll
  for (int r = 0; r < kKeyPasses; ++r) {
    const int m = keys.row_of(r), i = keys.column;
    in.k[r] = m >= 0 && m < rows ? __halves2bfloat162(policy.k_at(bh, first + m, i), policy.k_at(bh, first + m, i + 1))
                                 : zero;
  }
#pragma unroll
  for (int r = 0; r < kValuePasses; ++r) {
    const int m = values.row_of(r), j = j0 + values.column;
    in.v[r] = m >= 0 && m < rows ? __halves2bfloat162(policy.v_at(bh, first + m, j), policy.v_at(bh, first + m, j + 1))
                                 : zero;
  }
}

// The loaded chunk into shared memory (every row of the tile: the padding's zeros too), V scaled by
// exp(b_last - b_m) <= 1 and rounded to bf16 (the expression kernel (1) stages: the same bits).
// Pairs are 4-byte aligned: ld_k, ld_fused_v and the columns are even.
__device__ __forceinline__ void store_chunk_operands(const ChunkOperandsInFlight& in, const ChunkScalarDecayPlan& plan,
                                                     const PairWalk& key_walk, const PairWalk& value_walk,
                                                     __nv_bfloat16* __restrict__ k_tile,
                                                     __nv_bfloat16* __restrict__ v_tile, const float* __restrict__ b) {
  const PairWalk keys = key_walk.opaque(), values = value_walk.opaque();
  const float b_last = b[kC - 1];
#pragma unroll
  for (int r = 0; r < kKeyPasses; ++r) {
    const int m = keys.row_of(r);
    if (m >= 0) *reinterpret_cast<__nv_bfloat162*>(k_tile + m * plan.ld_k + keys.column) = in.k[r];
  }
#pragma unroll
  for (int r = 0; r < kValuePasses; ++r) {
    const int m = values.row_of(r);
    if (m >= 0) {
      const float weight = expf(b_last - b[m]);
      const float2 x = __bfloat1622float2(in.v[r]);
      *reinterpret_cast<__nv_bfloat162*>(v_tile + m * plan.ld_fused_v + values.column) =
          __halves2bfloat162(__float2bfloat16_rn(x.x * weight), __float2bfloat16_rn(x.y * weight));
    }
  }
}

// A warp's 16 x 16 fragment of S rounded to bf16 at `to` (row stride ld, 16-byte aligned rows)
// through the warp's fp32 staging tile: lane l stores row l / 2, columns 8 (l % 2) .. + 8 as one
// 16-byte vector.
__device__ __forceinline__ void store_fragment_bf16(__nv_bfloat16* __restrict__ to, int ld, float* __restrict__ stage,
                                                    const chunk_wmma::Accumulator& acc) {
  chunk_wmma::store_tile(stage, acc, kF);
  __syncwarp();
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int r = lane / 2, c0 = (lane % 2) * 8;
  alignas(16) __nv_bfloat162 pairs[4];
#pragma unroll
  for (int p = 0; p < 4; ++p) pairs[p] = __floats2bfloat162_rn(stage[r * kF + c0 + 2 * p], stage[r * kF + c0 + 2 * p + 1]);
  *reinterpret_cast<uint4*>(to + static_cast<std::int64_t>(r) * ld + c0) = *reinterpret_cast<const uint4*>(pairs);
  __syncwarp();  // the next fragment's store overwrites the staging tile
}

}  // namespace scalar_decay_fused_detail

// One block per (head bh, column tile): block = bh * fused_column_tiles + tile. Warp w carries the
// fragments w, w + 8, ... of the block's dk/16 x tile/16 fragments of S. `chunk_states` receives
// the bf16 state entering each chunk ([bh][chunk][dk][dv], the three kernels' layout); `state`
// [bh][dk][dv] (fp32) holds the state before the first token and receives the state after the last.
template <class Policy>
__global__ void __launch_bounds__(kScalarDecayThreads, kScalarDecayFusedMinBlocksPerSm)
    scalar_decay_fused_state_kernel(ChunkScalarDecayPlan plan, Policy policy, __nv_bfloat16* __restrict__ chunk_states,
                                    float* __restrict__ state) {
  using namespace scalar_decay_fused_detail;
  using chunk_wmma::Accumulator;
  extern __shared__ __align__(128) unsigned char shared[];
  const ScalarDecayFusedLayout& at = plan.fused_layout;
  auto* k_tile = reinterpret_cast<__nv_bfloat16*>(shared + at.k);
  auto* v_tile = reinterpret_cast<__nv_bfloat16*>(shared + at.v);
  auto* b_pair = reinterpret_cast<float*>(shared + at.decay);  // [2][C]: chunk c's b at (c % 2) * C
  const int warp = static_cast<int>(threadIdx.x / 32);
  float* stage = reinterpret_cast<float*>(shared + at.stage) + warp * kF * kF;

  const chunk_wmma::HeadIndex ht = chunk_wmma::head_index_of_block(plan.fused_column_tiles);
  const std::int64_t bh = ht.bh;
  const int width = plan.fused_column_tile;
  const int j0 = static_cast<int>(ht.index) * width;
  const int tiles_j = width / kF;
  const int fragments = (plan.dk / kF) * tiles_j;
  float* head_state = state + bh * plan.dk * plan.dv;

  Accumulator s[kScalarDecayFusedMaxFragments];
#pragma unroll
  for (int f = 0; f < kScalarDecayFusedMaxFragments; ++f) {
    const int tile = warp + f * kWarps;
    if (tile < fragments) {
      const int ti = tile / tiles_j, tj = tile % tiles_j;
      nvcuda::wmma::load_matrix_sync(s[f], head_state + ti * kF * plan.dv + j0 + tj * kF, plan.dv,
                                     nvcuda::wmma::mem_row_major);
    }
  }

  const PairWalk keys(plan.dk), values(width);
  ChunkOperandsInFlight in;
  load_chunk_operands(in, policy, plan, keys, values, bh, 0, j0);
  cumulative_log_decay(policy, b_pair, bh, 0, scalar_decay_chunk_rows(plan.tokens, 0));
  __syncthreads();  // b of chunk 0 is complete
  store_chunk_operands(in, plan, keys, values, k_tile, v_tile, b_pair);
  __syncthreads();

  for (std::int64_t chunk = 0; chunk < plan.chunks; ++chunk) {
    const float* b = b_pair + (chunk % 2) * kC;
    float* b_next = b_pair + ((chunk + 1) % 2) * kC;
    const bool more = chunk + 1 < plan.chunks;
    if (more) {  // in flight while this chunk's products run
      load_chunk_operands(in, policy, plan, keys, values, bh, chunk + 1, j0);
      cumulative_log_decay(policy, b_next, bh, (chunk + 1) * kC, scalar_decay_chunk_rows(plan.tokens, chunk + 1));
    }
    const float carry = expf(b[kC - 1]);
    __nv_bfloat16* entering = chunk_states + scalar_decay_state_offset(plan, bh, chunk);
#pragma unroll
    for (int f = 0; f < kScalarDecayFusedMaxFragments; ++f) {
      const int tile = warp + f * kWarps;
      if (tile < fragments) {
        const int ti = tile / tiles_j, tj = tile % tiles_j;
        // S_c leaves before it is updated: kernel (3) of chunk c reads the state entering it.
        store_fragment_bf16(entering + static_cast<std::int64_t>(ti * kF) * plan.dv + j0 + tj * kF, plan.dv, stage,
                            s[f]);
        // Decay first, then add: the chunk's own tokens have decayed by exp(b_last - b_j) already.
#pragma unroll
        for (int x = 0; x < s[f].num_elements; ++x) s[f].x[x] *= carry;
        chunk_wmma::mma_atb_panel(s[f], k_tile, plan.ld_k, v_tile, plan.ld_fused_v, ti, tj, kC / kF);
      }
    }
    __syncthreads();  // K and V are consumed; the next chunk's b is complete
    if (more) store_chunk_operands(in, plan, keys, values, k_tile, v_tile, b_next);
    __syncthreads();
  }

#pragma unroll
  for (int f = 0; f < kScalarDecayFusedMaxFragments; ++f) {
    const int tile = warp + f * kWarps;
    if (tile < fragments) {
      const int ti = tile / tiles_j, tj = tile % tiles_j;
      chunk_wmma::store_tile(head_state + ti * kF * plan.dv + j0 + tj * kF, s[f], plan.dv);
    }
  }
}

}  // namespace arch_bench
