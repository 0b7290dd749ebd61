// RWKV-6's chunkwise prefill on tensor cores, bf16 storage (the algebra, the geometry and the bytes:
// chunk_plan.hpp; the same arithmetic replayed on the CPU: chunk_replay.cpp). Three kernels on one
// stream: (1) each chunk's own state contribution U_c and its total log-decay, (2) the prefix over
// chunks that turns U_c into the state entering chunk c, (3) each chunk's output. Chunks of 16
// tokens, one wmma tile: the intra-chunk scores, whose per-channel pair weights exp(b_{t-1} - b_s)
// do not factor into bounded row and column terms, are computed pair by pair in fp32; every
// exponent is <= 0. bf16 operands, fp32 accumulators; expf (not __expf), as rwkv6/cuda.cu.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_plan.hpp"

namespace arch_bench {

namespace {

namespace wmma = nvcuda::wmma;
using nv_bf16 = __nv_bfloat16;

constexpr int kC = kRwkv6ChunkTokens;
constexpr int kF = kRwkv6ChunkFragment;
constexpr int kWarps = kRwkv6ChunkThreads / 32;

// The (head, chunk) of a block of kernel (1) or (3): block = bh * chunks + chunk. A one-dimensional
// grid under 2^31 blocks (rwkv_cuda_unsupported refuses more), so 32-bit division suffices.
struct HeadChunk {
  std::int64_t bh;
  std::int64_t chunk;
};
__device__ __forceinline__ HeadChunk head_chunk_of_block(const Rwkv6ChunkPlan& plan) {
  const unsigned chunks = static_cast<unsigned>(plan.chunks);
  return {static_cast<std::int64_t>(blockIdx.x / chunks), static_cast<std::int64_t>(blockIdx.x % chunks)};
}

// b [C][ld]: the inclusive cumulative log-decay of the chunk's tokens per key channel, log w =
// max(-exp(d), -100) summed token by token in fp32 by the channel's thread (the order the replay
// sums in); 0 past the sequence, so b stays flat over the padding and row C - 1 is the chunk's
// total. `d` points at the chunk's first token. The same code in kernels (1) and (3), so both see
// bit-identical b.
__device__ __forceinline__ void cumulative_log_decay(const nv_bf16* __restrict__ d, int dim, int rows,
                                                     float* __restrict__ b, int ld) {
  for (int c = threadIdx.x; c < dim; c += blockDim.x) {
    float running = 0.0f;
#pragma unroll
    for (int m = 0; m < kC; ++m) {
      if (m < rows) running += fmaxf(-expf(__bfloat162float(d[m * dim + c])), -100.0f);
      b[m * ld + c] = running;
    }
  }
}

// (1) One block per (head, chunk): U_c = K~^T V with K~ = bf16(k_s exp(b_last - b_s)) into the
// workspace (bf16, [dim][dim] row-major), b_last into chunk_log_decay. Warp w computes the 16 x 16
// tiles w, w + 8, ... of U (one k-step: the chunk is 16 tokens), each through its own fp32 staging
// tile (wmma stores fp32 accumulators only), rounded to bf16 on the way out.
__global__ void __launch_bounds__(kRwkv6ChunkThreads)
    rwkv6_chunk_state_kernel(Rwkv6ChunkPlan plan, const nv_bf16* __restrict__ k, const nv_bf16* __restrict__ v,
                             const nv_bf16* __restrict__ d, nv_bf16* __restrict__ states,
                             float* __restrict__ chunk_log_decay) {
  extern __shared__ __align__(128) unsigned char shared[];
  const Rwkv6ChunkStateLayout& at = plan.state_layout;
  auto* b = reinterpret_cast<float*>(shared + at.b);
  auto* k_tile = reinterpret_cast<nv_bf16*>(shared + at.k);
  auto* v_tile = reinterpret_cast<nv_bf16*>(shared + at.v);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  float* u_stage = reinterpret_cast<float*>(shared + at.u) + warp * kF * kF;

  const HeadChunk hc = head_chunk_of_block(plan);
  const int dim = plan.dim, ld = plan.ld_bf16;
  const std::int64_t first = (hc.bh * plan.tokens + hc.chunk * kC) * dim;  // the chunk's first element
  const int rows = rwkv6_chunk_rows(plan.tokens, hc.chunk);

  cumulative_log_decay(d + first, dim, rows, b, dim);
  __syncthreads();  // b is complete
  const float* b_last = b + (kC - 1) * dim;
  for (int e = threadIdx.x; e < kC * dim; e += blockDim.x) {
    const int m = e / dim, c = e % dim;
    const bool live = m < rows;
    // exp(b_last - b_m) <= 1: a later token has decayed less by the chunk's end.
    const float kd = live ? __bfloat162float(k[first + e]) * expf(b_last[c] - b[m * dim + c]) : 0.0f;
    k_tile[m * ld + c] = __float2bfloat16_rn(kd);
    v_tile[m * ld + c] = live ? v[first + e] : __float2bfloat16_rn(0.0f);
  }
  __syncthreads();

  nv_bf16* u = states + rwkv6_chunk_state_offset(plan, hc.bh, hc.chunk);
  const int tiles_j = dim / kF;
  for (int tile = warp; tile < tiles_j * tiles_j; tile += kWarps) {
    const int ti = tile / tiles_j, tj = tile % tiles_j;
    wmma::fragment<wmma::accumulator, kF, kF, kF, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    // K~^T as matrix_a: element (i, m) of K~^T is K~[m][i], at m * ld + i: column-major.
    wmma::fragment<wmma::matrix_a, kF, kF, kF, nv_bf16, wmma::col_major> kt;
    wmma::fragment<wmma::matrix_b, kF, kF, kF, nv_bf16, wmma::row_major> vf;
    wmma::load_matrix_sync(kt, k_tile + ti * kF, ld);
    wmma::load_matrix_sync(vf, v_tile + tj * kF, ld);
    wmma::mma_sync(acc, kt, vf, acc);
    wmma::store_matrix_sync(u_stage, acc, kF, wmma::mem_row_major);
    __syncwarp();
    // Lane l rounds row l / 2, columns 8 (l % 2) .. + 8 of the tile and stores them as one 16-byte
    // vector: the element offset is a multiple of 8 (dim^2, dim and the tile's column are multiples
    // of 16), so the address is 16-byte aligned.
    const int r = lane / 2, c0 = (lane % 2) * 8;
    alignas(16) __nv_bfloat162 pairs[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      pairs[p] = __floats2bfloat162_rn(u_stage[r * kF + c0 + 2 * p], u_stage[r * kF + c0 + 2 * p + 1]);
    }
    *reinterpret_cast<uint4*>(u + static_cast<std::int64_t>(ti * kF + r) * dim + tj * kF + c0) =
        *reinterpret_cast<const uint4*>(pairs);
    __syncwarp();  // the next tile's store overwrites the staging tile
  }
  float* decay_out = chunk_log_decay + rwkv6_chunk_decay_offset(plan, hc.bh, hc.chunk);
  for (int c = threadIdx.x; c < dim; c += blockDim.x) decay_out[c] = b_last[c];
}

// (2) One thread per pair of adjacent elements (2e, 2e + 1) of a head's S, both in key row
// 2e / dim (dim is even): in place over the chunks, U_c (bf16) becomes the state entering chunk c
// (bf16), S_{c+1} = exp(b_last,c[row]) S_c + U_c carried in fp32 registers, and the state after the
// last chunk goes to `state` (fp32, which holds the state before the first: a prefill continues
// from it). Loads are issued kBatch chunks at a time, so the sequential chain is not one memory
// latency per chunk.
template <int kBatch = 8>
__global__ void __launch_bounds__(kRwkv6ChunkThreads)
    rwkv6_chunk_prefix_kernel(Rwkv6ChunkPlan plan, __nv_bfloat162* __restrict__ states,
                              const float* __restrict__ chunk_log_decay, float* __restrict__ state) {
  const unsigned per_head = static_cast<unsigned>(plan.prefix_blocks_per_head);
  const std::int64_t bh = blockIdx.x / per_head;
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x % per_head) * kRwkv6ChunkThreads + threadIdx.x;
  const std::int64_t pairs = static_cast<std::int64_t>(plan.dim) * plan.dim / 2;
  if (e >= pairs) return;
  const int row = static_cast<int>(2 * e / plan.dim);
  // dim^2 is even, so each head's fp32 state starts 8-byte aligned.
  float2* carried = reinterpret_cast<float2*>(state + bh * 2 * pairs) + e;
  __nv_bfloat162* column = states + rwkv6_chunk_state_offset(plan, bh, 0) / 2 + e;
  const float* decay = chunk_log_decay + rwkv6_chunk_decay_offset(plan, bh, 0) + row;  // + chunk * dim
  float2 running = *carried;
  for (std::int64_t c0 = 0; c0 < plan.chunks; c0 += kBatch) {
    __nv_bfloat162 local[kBatch];
    float carry[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const bool live = c0 + i < plan.chunks;
      local[i] = live ? column[(c0 + i) * pairs] : __floats2bfloat162_rn(0.0f, 0.0f);
      carry[i] = live ? decay[(c0 + i) * plan.dim] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (c0 + i < plan.chunks) {
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

// (3) One block per (head, chunk): O = P V + R~ S_c. Thread (t, s) = (thread / 16, thread % 16)
// computes the score P_ts in fp32 over the key channels (pair weight exp(b_{t-1} - b_s) <= 1 for
// s < t, the bonus u at s = t, 0 above the diagonal), rounded to bf16; R~ = bf16(r_t exp(b_{t-1})).
// Warp w < dim / 16 then computes output columns 16 w .. 16 w + 15: P V (one k-step) and R~ S_c over
// dim / 16 k-steps, S_c loaded by wmma straight from the workspace (each element by one warp, once).
__global__ void __launch_bounds__(kRwkv6ChunkThreads)
    rwkv6_chunk_output_kernel(Rwkv6ChunkPlan plan, const nv_bf16* __restrict__ r, const nv_bf16* __restrict__ k,
                              const nv_bf16* __restrict__ v, const nv_bf16* __restrict__ d,
                              const float* __restrict__ bonus, const nv_bf16* __restrict__ states,
                              nv_bf16* __restrict__ out) {
  extern __shared__ __align__(128) unsigned char shared[];
  const Rwkv6ChunkOutputLayout& at = plan.output_layout;
  auto* r_s = reinterpret_cast<float*>(shared + at.r);
  auto* k_s = reinterpret_cast<float*>(shared + at.k);
  auto* b = reinterpret_cast<float*>(shared + at.b);
  auto* u_s = reinterpret_cast<float*>(shared + at.u);
  auto* r_decayed = reinterpret_cast<nv_bf16*>(shared + at.r_decayed);
  auto* v_tile = reinterpret_cast<nv_bf16*>(shared + at.v);
  auto* p_tile = reinterpret_cast<nv_bf16*>(shared + at.p);
  auto* o_tile = reinterpret_cast<float*>(shared + at.o);

  const HeadChunk hc = head_chunk_of_block(plan);
  const int dim = plan.dim, ld = plan.ld_bf16, lds = plan.ld_scalar;
  const std::int64_t first = (hc.bh * plan.tokens + hc.chunk * kC) * dim;
  const int rows = rwkv6_chunk_rows(plan.tokens, hc.chunk);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);

  cumulative_log_decay(d + first, dim, rows, b, lds);
  for (int e = threadIdx.x; e < kC * dim; e += blockDim.x) {
    const int m = e / dim, c = e % dim;
    const bool live = m < rows;
    r_s[m * lds + c] = live ? __bfloat162float(r[first + e]) : 0.0f;
    k_s[m * lds + c] = live ? __bfloat162float(k[first + e]) : 0.0f;
    v_tile[m * ld + c] = live ? v[first + e] : __float2bfloat16_rn(0.0f);
  }
  const float* u_row = bonus + (hc.bh % plan.heads) * dim;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) u_s[c] = u_row[c];
  __syncthreads();

  {
    const int t = static_cast<int>(threadIdx.x) / kC, s = static_cast<int>(threadIdx.x) % kC;
    const float* rt = r_s + t * lds;
    const float* ks = k_s + s * lds;
    float a = 0.0f;
    if (s < t) {
      const float* before = b + (t - 1) * lds;  // b_{t-1}
      const float* after = b + s * lds;         // b_s
      for (int c = 0; c < dim; ++c) a = fmaf(rt[c] * ks[c], expf(before[c] - after[c]), a);
    } else if (s == t) {
      for (int c = 0; c < dim; ++c) a = fmaf(rt[c] * u_s[c], ks[c], a);
    }
    p_tile[t * plan.ld_p + s] = __float2bfloat16_rn(a);
  }
  for (int e = threadIdx.x; e < kC * dim; e += blockDim.x) {
    const int m = e / dim, c = e % dim;
    const float before = m > 0 ? b[(m - 1) * lds + c] : 0.0f;
    r_decayed[m * ld + c] = __float2bfloat16_rn(r_s[m * lds + c] * expf(before));
  }
  __syncthreads();

  if (warp >= dim / kF) return;  // no output columns left for this warp (dim < 128)
  const int tj = warp;
  wmma::fragment<wmma::accumulator, kF, kF, kF, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  {  // intra-chunk: P V
    wmma::fragment<wmma::matrix_a, kF, kF, kF, nv_bf16, wmma::row_major> p;
    wmma::fragment<wmma::matrix_b, kF, kF, kF, nv_bf16, wmma::row_major> vf;
    wmma::load_matrix_sync(p, p_tile, plan.ld_p);
    wmma::load_matrix_sync(vf, v_tile + tj * kF, ld);
    wmma::mma_sync(acc, p, vf, acc);
  }
  const nv_bf16* s_in = states + rwkv6_chunk_state_offset(plan, hc.bh, hc.chunk);
  for (int kk = 0; kk < dim / kF; ++kk) {  // inter-chunk: R~ S_c
    wmma::fragment<wmma::matrix_a, kF, kF, kF, nv_bf16, wmma::row_major> q;
    wmma::fragment<wmma::matrix_b, kF, kF, kF, nv_bf16, wmma::row_major> s;
    wmma::load_matrix_sync(q, r_decayed + kk * kF, ld);
    wmma::load_matrix_sync(s, s_in + static_cast<std::int64_t>(kk * kF) * dim + tj * kF, dim);
    wmma::mma_sync(acc, q, s, acc);
  }
  float* o = o_tile + tj * kF;  // this warp's columns of the staging rows
  wmma::store_matrix_sync(o, acc, plan.ld_o, wmma::mem_row_major);
  __syncwarp();
  for (int e = lane; e < rows * kF; e += 32) {  // rows past the sequence are dropped
    const int m = e / kF, j = e % kF;
    out[first + static_cast<std::int64_t>(m) * dim + tj * kF + j] = __float2bfloat16_rn(o[m * plan.ld_o + j]);
  }
}

}  // namespace

void launch_rwkv6_chunked(const Rwkv6ChunkPlan& plan, const RwkvParameters& params, const RwkvTokens<bf16>& x,
                          float* state, float* workspace, bf16* out, CUstream_st* stream) {
  if (plan.tokens == 0 || plan.batch_heads == 0) return;  // nothing to fold in; S unchanged
  auto* states = reinterpret_cast<nv_bf16*>(workspace);
  float* chunk_log_decay = workspace + plan.workspace_state_elements;
  const auto* r = reinterpret_cast<const nv_bf16*>(x.r);
  const auto* k = reinterpret_cast<const nv_bf16*>(x.k);
  const auto* v = reinterpret_cast<const nv_bf16*>(x.v);
  const auto* d = reinterpret_cast<const nv_bf16*>(x.decay);
  rwkv6_chunk_state_kernel<<<static_cast<unsigned>(plan.state_blocks), plan.threads, plan.state_layout.bytes,
                             stream>>>(plan, k, v, d, states, chunk_log_decay);
  check_launch("rwkv6_chunk_state_kernel");
  rwkv6_chunk_prefix_kernel<><<<static_cast<unsigned>(plan.prefix_blocks), plan.threads, 0, stream>>>(
      plan, reinterpret_cast<__nv_bfloat162*>(states), chunk_log_decay, state);
  check_launch("rwkv6_chunk_prefix_kernel");
  rwkv6_chunk_output_kernel<<<static_cast<unsigned>(plan.output_blocks), plan.threads, plan.output_layout.bytes,
                              stream>>>(plan, r, k, v, d, params.u, states, reinterpret_cast<nv_bf16*>(out));
  check_launch("rwkv6_chunk_output_kernel");
}

}  // namespace arch_bench
