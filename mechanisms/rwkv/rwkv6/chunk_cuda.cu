// RWKV-6's chunkwise prefill on tensor cores, bf16 storage (the algebra, the geometry and the bytes:
// chunk_plan.hpp; the same arithmetic replayed on the CPU: chunk_replay.cpp). Three kernels on one
// stream: (1) each chunk's own state contribution U_c and its total log-decay, (2) the prefix over
// chunks that turns U_c into the state entering chunk c, (3) each chunk's output. Chunks of 64
// tokens, four sub-chunks of 16 (one wmma tile each): the diagonal sub-chunk blocks of the scores,
// whose per-channel pair weights exp(beta_{t-1} - beta_s) do not factor into bounded row and column
// terms, are computed pair by pair in fp32; the off-diagonal blocks are factored at the query's
// sub-chunk boundary into two factors <= 1 and run on wmma. Every exponent is <= 0. bf16 operands,
// fp32 accumulators; expf (not __expf), as rwkv6/cuda.cu.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/chunk_state_prefix.cuh"
#include "mechanisms/common/dynamic_shared_memory.cuh"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_plan.hpp"

namespace arch_bench {

namespace {

namespace wmma = nvcuda::wmma;
using nv_bf16 = __nv_bfloat16;

constexpr int kC = kRwkv6ChunkTokens;
constexpr int kSub = kRwkv6ChunkSubTokens;
constexpr int kSubs = kRwkv6ChunkSubs;
constexpr int kF = kRwkv6ChunkFragment;
constexpr int kWarps = kRwkv6ChunkWarps;

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

// beta [C][ld]: per sub-chunk and key channel the inclusive cumulative log-decay from the sub-chunk's
// first token, log w = max(-exp(d), -100) summed token by token in fp32 by the (sub-chunk, channel)'s
// thread (the order the replay sums in); 0 past the sequence, so beta stays flat over the padding.
// totals [subs][dim]: each sub-chunk's T_J (beta at its last row). `d` points at the chunk's first
// token. The same code in kernels (1) and (3), so both see bit-identical values.
__device__ __forceinline__ void sub_chunk_log_decays(const nv_bf16* __restrict__ d, int dim, int rows,
                                                     float* __restrict__ beta, int ld, float* __restrict__ totals) {
  for (int e = threadIdx.x; e < kSubs * dim; e += blockDim.x) {
    const int sub = e / dim, c = e % dim;
    float running = 0.0f;
#pragma unroll
    for (int j = 0; j < kSub; ++j) {
      const int m = sub * kSub + j;
      if (m < rows) running += fmaxf(-expf(__bfloat162float(d[m * dim + c])), -100.0f);
      beta[m * ld + c] = running;
    }
    totals[sub * dim + c] = running;
  }
}

// sum_{from <= m < to} T_m at channel c, summed in sub-chunk order from 0 (as the replay): a sum of
// values <= 0.
__device__ __forceinline__ float sum_of_totals(const float* __restrict__ totals, int dim, int c, int from, int to) {
  float sum = 0.0f;
  for (int m = from; m < to; ++m) sum += totals[m * dim + c];
  return sum;
}

// Rounds a warp's 16 x 16 fp32 staging tile (row stride 16) to bf16 and stores it at `dst` (row
// stride ld, 16-byte aligned rows): lane l takes row l / 2, columns 8 (l % 2) .. + 8, as one 16-byte
// vector.
__device__ __forceinline__ void store_tile_bf16(const float* __restrict__ stage, nv_bf16* __restrict__ dst,
                                                std::int64_t ld, int lane) {
  const int r = lane / 2, c0 = (lane % 2) * 8;
  alignas(16) __nv_bfloat162 pairs[4];
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    pairs[p] = __floats2bfloat162_rn(stage[r * kF + c0 + 2 * p], stage[r * kF + c0 + 2 * p + 1]);
  }
  *reinterpret_cast<uint4*>(dst + r * ld + c0) = *reinterpret_cast<const uint4*>(pairs);
}

// (1) One block per (head, chunk): U_c = K~^T V with K~ = bf16(k_s exp((T_J - beta_s) + sum_{m > J}
// T_m)) (the decay from s + 1 to the chunk's end, <= 1) into the workspace (bf16, [dim][dim]
// row-major), b_last = sum of the four T into chunk_log_decay. Warp w computes the 16 x 16 tiles w,
// w + 8, ... of U (four k-steps of 16 tokens), each through its own fp32 staging tile (wmma stores
// fp32 accumulators only), rounded to bf16 on the way out.
__global__ void __launch_bounds__(kRwkv6ChunkThreads)
    rwkv6_chunk_state_kernel(Rwkv6ChunkPlan plan, const nv_bf16* __restrict__ k, const nv_bf16* __restrict__ v,
                             const nv_bf16* __restrict__ d, nv_bf16* __restrict__ states,
                             float* __restrict__ chunk_log_decay) {
  extern __shared__ __align__(128) unsigned char shared[];
  const Rwkv6ChunkStateLayout& at = plan.state_layout;
  auto* beta = reinterpret_cast<float*>(shared + at.beta);
  auto* totals = reinterpret_cast<float*>(shared + at.totals);
  auto* k_tile = reinterpret_cast<nv_bf16*>(shared + at.k);
  auto* v_tile = reinterpret_cast<nv_bf16*>(shared + at.v);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  // The staging tiles share beta's region: written only after the barrier that ends beta's last read.
  float* stage = reinterpret_cast<float*>(shared + at.stage) + warp * kF * kF;

  const HeadChunk hc = head_chunk_of_block(plan);
  const int dim = plan.dim, ld = plan.ld_bf16;
  const std::int64_t first = (hc.bh * plan.tokens + hc.chunk * kC) * dim;  // the chunk's first element
  const int rows = rwkv6_chunk_rows(plan.tokens, hc.chunk);

  sub_chunk_log_decays(d + first, dim, rows, beta, dim, totals);
  __syncthreads();  // beta and the totals are complete
  for (int e = threadIdx.x; e < kC * dim; e += blockDim.x) {
    const int m = e / dim, c = e % dim, sub = m / kSub;
    const bool live = m < rows;
    const float exponent = (totals[sub * dim + c] - beta[m * dim + c]) + sum_of_totals(totals, dim, c, sub + 1, kSubs);
    const float kd = live ? __bfloat162float(k[first + e]) * expf(exponent) : 0.0f;
    k_tile[m * ld + c] = __float2bfloat16_rn(kd);
    v_tile[m * ld + c] = live ? v[first + e] : __float2bfloat16_rn(0.0f);
  }
  __syncthreads();  // K~ is complete and beta dead: its region now holds the staging tiles

  nv_bf16* u = states + rwkv6_chunk_state_offset(plan, hc.bh, hc.chunk);
  const int tiles_j = dim / kF;
  for (int tile = warp; tile < tiles_j * tiles_j; tile += kWarps) {
    const int ti = tile / tiles_j, tj = tile % tiles_j;
    wmma::fragment<wmma::accumulator, kF, kF, kF, float> acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < kSubs; ++kk) {  // the chunk's tokens, 16 at a time
      // K~^T as matrix_a: element (i, m) of K~^T is K~[m][i], at m * ld + i: column-major.
      wmma::fragment<wmma::matrix_a, kF, kF, kF, nv_bf16, wmma::col_major> kt;
      wmma::fragment<wmma::matrix_b, kF, kF, kF, nv_bf16, wmma::row_major> vf;
      wmma::load_matrix_sync(kt, k_tile + kk * kF * ld + ti * kF, ld);
      wmma::load_matrix_sync(vf, v_tile + kk * kF * ld + tj * kF, ld);
      wmma::mma_sync(acc, kt, vf, acc);
    }
    wmma::store_matrix_sync(stage, acc, kF, wmma::mem_row_major);
    __syncwarp();
    // The element offset is a multiple of 8 (dim^2, dim and the tile's column are multiples of 16),
    // so every row's address is 16-byte aligned.
    store_tile_bf16(stage, u + static_cast<std::int64_t>(ti * kF) * dim + tj * kF, dim, lane);
    __syncwarp();  // the next tile's store overwrites the staging tile
  }
  float* decay_out = chunk_log_decay + rwkv6_chunk_decay_offset(plan, hc.bh, hc.chunk);
  for (int c = threadIdx.x; c < dim; c += blockDim.x) decay_out[c] = sum_of_totals(totals, dim, c, 0, kSubs);
}

// (2) One thread per pair of adjacent elements (2e, 2e + 1) of a head's S, both in key row
// 2e / dim (dim is even), carried over the chunks with b_c = b_last,c[row] (chunk_state_prefix.cuh).
template <int kBatch = 8>
__global__ void __launch_bounds__(kRwkv6ChunkThreads)
    rwkv6_chunk_prefix_kernel(Rwkv6ChunkPlan plan, __nv_bfloat162* __restrict__ states,
                              const float* __restrict__ chunk_log_decay, float* __restrict__ state) {
  const int dim = plan.dim;
  carry_state_pair_over_chunks<kBatch, kRwkv6ChunkThreads>(
      plan.prefix_blocks_per_head, static_cast<std::int64_t>(dim) * dim / 2, plan.chunks, state,
      [&](std::int64_t bh, std::int64_t e) { return states + rwkv6_chunk_state_offset(plan, bh, 0) / 2 + e; },
      [&](std::int64_t bh, std::int64_t e) {
        const int row = static_cast<int>(2 * e / dim);
        const float* decay = chunk_log_decay + rwkv6_chunk_decay_offset(plan, bh, 0) + row;  // + chunk * dim
        return [=](std::int64_t chunk) { return decay[chunk * dim]; };
      });
}

// Eight consecutive bf16 (16 bytes, 16-byte aligned) widened to fp32.
__device__ __forceinline__ void load8_bf16(const nv_bf16* __restrict__ src, float (&x)[kRwkv6ChunkPairVector]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(src);
  const auto* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const float2 f = __bfloat1622float2(pairs[p]);
    x[2 * p] = f.x;
    x[2 * p + 1] = f.y;
  }
}
// Eight consecutive floats (32 bytes, 16-byte aligned): two float4 loads.
__device__ __forceinline__ void load8_float(const float* __restrict__ src, float (&x)[kRwkv6ChunkPairVector]) {
  const float4 lo = *reinterpret_cast<const float4*>(src), hi = *reinterpret_cast<const float4*>(src + 4);
  x[0] = lo.x, x[1] = lo.y, x[2] = lo.z, x[3] = lo.w, x[4] = hi.x, x[5] = hi.y, x[6] = hi.z, x[7] = hi.w;
}

// (3) One block per (head, chunk): P, then O = P V + R^ S_c, in five phases whose regions overlap
// (chunk_plan.hpp, Rwkv6ChunkOutputLayout):
//   (a) r and k as they come (bf16: they are bf16 in memory, so nothing is rounded), beta and the
//       totals as kernel (1), u;
//   (b) thread (t, s) = (thread / 16, thread % 16) computes the diagonal score of (16 J + t, 16 J + s)
//       in each sub-chunk J in fp32 over the key channels (exp(beta_{t-1} - beta_s) <= 1 for s < t,
//       the bonus u at s = t, 0 above), rounded to bf16 into P; eight channels per read;
//   (c) every element (m, c) of the chunk, by one thread, which reads r, k and beta there first:
//       Q~ = bf16(r exp(beta_{m-1})) for the sub-chunks 1..3, R^ = bf16(r exp(P_J + beta_{m-1})) over
//       r, K^(J+1)_m = bf16(k exp(T_J - beta_m)) over k (J < 3), and for the far I >= J + 2
//       K^(I)_m = bf16(k exp((T_J - beta_m) + sum_{J < i < I} T_i)) into the far-key tiles;
//   (d) V into beta's region (dead after (c)); warps 0..5 one off-diagonal block (I, J) each:
//       Q~_I K^(I)_J^T over dim / 16 k-steps through a staging tile placed after V, rounded to bf16
//       into P;
//   (e) the output tiles (I, j) over the warps: P_IJ V_J for J <= I (the causal block triangle) and
//       R^_I S_c over dim / 16 k-steps, S_c loaded by wmma straight from the workspace.
// A barrier ends each phase: (c) overwrites r and k, which (b) reads across threads; (d) overwrites
// beta, which (c) reads.
__global__ void __launch_bounds__(kRwkv6ChunkThreads)
    rwkv6_chunk_output_kernel(Rwkv6ChunkPlan plan, const nv_bf16* __restrict__ r, const nv_bf16* __restrict__ k,
                              const nv_bf16* __restrict__ v, const nv_bf16* __restrict__ d,
                              const float* __restrict__ bonus, const nv_bf16* __restrict__ states,
                              nv_bf16* __restrict__ out) {
  extern __shared__ __align__(128) unsigned char shared[];
  const Rwkv6ChunkOutputLayout& at = plan.output_layout;
  auto* r_s = reinterpret_cast<nv_bf16*>(shared + at.r);  // r, then R^
  auto* k_s = reinterpret_cast<nv_bf16*>(shared + at.k);  // k, then the adjacent blocks' K^
  auto* beta = reinterpret_cast<float*>(shared + at.beta);
  auto* totals = reinterpret_cast<float*>(shared + at.totals);
  auto* u_s = reinterpret_cast<float*>(shared + at.u);
  auto* q_local = reinterpret_cast<nv_bf16*>(shared + at.q_local);  // row m - 16 holds token m
  auto* far_keys = reinterpret_cast<nv_bf16*>(shared + at.far_keys);
  auto* p_tile = reinterpret_cast<nv_bf16*>(shared + at.p);
  auto* v_tile = reinterpret_cast<nv_bf16*>(shared + at.v);  // beta's region, from (d)
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  float* stage = reinterpret_cast<float*>(shared + at.stage) + warp * kF * kF;  // beta's region, from (d)

  const HeadChunk hc = head_chunk_of_block(plan);
  const int dim = plan.dim, ld = plan.ld_bf16, ldb = plan.ld_beta, ldp = plan.ld_p;
  const std::int64_t first = (hc.bh * plan.tokens + hc.chunk * kC) * dim;
  const int rows = rwkv6_chunk_rows(plan.tokens, hc.chunk);
  const nv_bf16 zero = __float2bfloat16_rn(0.0f);

  // (a)
  sub_chunk_log_decays(d + first, dim, rows, beta, ldb, totals);
  for (int e = threadIdx.x; e < kC * dim; e += blockDim.x) {
    const int m = e / dim, c = e % dim;
    const bool live = m < rows;
    r_s[m * ld + c] = live ? r[first + e] : zero;
    k_s[m * ld + c] = live ? k[first + e] : zero;
  }
  const float* u_row = bonus + (hc.bh % plan.heads) * dim;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) u_s[c] = u_row[c];
  __syncthreads();

  {  // (b) the diagonal blocks, pair by pair; the channels in order, as the replay sums them
    const int t = static_cast<int>(threadIdx.x) / kSub, s = static_cast<int>(threadIdx.x) % kSub;
    for (int sub = 0; sub < kSubs; ++sub) {
      const int tm = sub * kSub + t, sm = sub * kSub + s;
      const nv_bf16* rt = r_s + tm * ld;
      const nv_bf16* ks = k_s + sm * ld;
      float a = 0.0f;
      if (s < t) {
        const float* before = beta + (tm - 1) * ldb;  // beta_{t-1}, in t's sub-chunk since t > s >= 0
        const float* after = beta + sm * ldb;         // beta_s
        for (int c0 = 0; c0 < dim; c0 += kRwkv6ChunkPairVector) {
          float rv[kRwkv6ChunkPairVector], kv[kRwkv6ChunkPairVector], bv[kRwkv6ChunkPairVector],
              av[kRwkv6ChunkPairVector];
          load8_bf16(rt + c0, rv);
          load8_bf16(ks + c0, kv);
          load8_float(before + c0, bv);
          load8_float(after + c0, av);
#pragma unroll
          for (int i = 0; i < kRwkv6ChunkPairVector; ++i) a = fmaf(rv[i] * kv[i], expf(bv[i] - av[i]), a);
        }
      } else if (s == t) {
        for (int c = 0; c < dim; ++c) a = fmaf(__bfloat162float(rt[c]) * u_s[c], __bfloat162float(ks[c]), a);
      }
      p_tile[tm * ldp + sm] = __float2bfloat16_rn(a);
    }
  }
  __syncthreads();  // (b) has read r and k across threads: (c) may overwrite them

  // (c)
  for (int e = threadIdx.x; e < kC * dim; e += blockDim.x) {
    const int m = e / dim, c = e % dim, sub = m / kSub;
    const float before = m % kSub > 0 ? beta[(m - 1) * ldb + c] : 0.0f;  // beta_{m-1}
    const float rm = __bfloat162float(r_s[m * ld + c]);
    const float km = __bfloat162float(k_s[m * ld + c]);
    if (sub > 0) q_local[(m - kSub) * ld + c] = __float2bfloat16_rn(rm * expf(before));
    r_s[m * ld + c] = __float2bfloat16_rn(rm * expf(sum_of_totals(totals, dim, c, 0, sub) + before));
    const float to_sub_end = totals[sub * dim + c] - beta[m * ldb + c];  // <= 0: beta never rises
    float between = 0.0f;
    for (int query_sub = sub + 1; query_sub < kSubs; ++query_sub) {
      const nv_bf16 key = __float2bfloat16_rn(km * expf(to_sub_end + between));
      const Rwkv6ChunkKeyTile tile = rwkv6_chunk_key_tile(query_sub, sub);
      nv_bf16* region = tile.over_k ? k_s : far_keys;  // over k: this thread's own element (m, c)
      region[(tile.row + m % kSub) * ld + c] = key;
      between += totals[query_sub * dim + c];
    }
  }
  __syncthreads();  // (c) has read beta: V and the staging tiles may take its region

  // (d)
  for (int e = threadIdx.x; e < kC * dim; e += blockDim.x) {
    const int m = e / dim, c = e % dim;
    v_tile[m * ld + c] = m < rows ? v[first + e] : zero;
  }
  const int k_steps = dim / kF;
  for (int block = warp; block < kRwkv6ChunkOffDiagonalBlocks; block += kWarps) {
    const Rwkv6ChunkBlock ij = rwkv6_chunk_off_diagonal_block(block);
    const Rwkv6ChunkKeyTile tile = rwkv6_chunk_key_tile(ij.query_sub, ij.key_sub);
    const nv_bf16* keys = (tile.over_k ? k_s : far_keys) + tile.row * ld;
    const nv_bf16* queries = q_local + (ij.query_sub - 1) * kSub * ld;
    wmma::fragment<wmma::accumulator, kF, kF, kF, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < k_steps; ++kk) {
      // K^T as matrix_b: element (c, s) of K^T is K[s][c], at s * ld + c: column-major.
      wmma::fragment<wmma::matrix_a, kF, kF, kF, nv_bf16, wmma::row_major> q;
      wmma::fragment<wmma::matrix_b, kF, kF, kF, nv_bf16, wmma::col_major> kt;
      wmma::load_matrix_sync(q, queries + kk * kF, ld);
      wmma::load_matrix_sync(kt, keys + kk * kF, ld);
      wmma::mma_sync(acc, q, kt, acc);
    }
    wmma::store_matrix_sync(stage, acc, kF, wmma::mem_row_major);
    __syncwarp();
    // ld_p and the block's column (16 J) are multiples of 8: 16-byte aligned rows.
    store_tile_bf16(stage, p_tile + ij.query_sub * kSub * ldp + ij.key_sub * kSub, ldp, lane);
    __syncwarp();
  }
  __syncthreads();  // P and V are complete

  // (e)
  const nv_bf16* s_in = states + rwkv6_chunk_state_offset(plan, hc.bh, hc.chunk);
  for (int tile = warp; tile < kSubs * k_steps; tile += kWarps) {
    const int query_sub = tile / k_steps, tj = tile % k_steps;
    wmma::fragment<wmma::accumulator, kF, kF, kF, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int key_sub = 0; key_sub <= query_sub; ++key_sub) {  // intra-chunk: P V, causal blocks only
      wmma::fragment<wmma::matrix_a, kF, kF, kF, nv_bf16, wmma::row_major> p;
      wmma::fragment<wmma::matrix_b, kF, kF, kF, nv_bf16, wmma::row_major> vf;
      wmma::load_matrix_sync(p, p_tile + query_sub * kSub * ldp + key_sub * kSub, ldp);
      wmma::load_matrix_sync(vf, v_tile + key_sub * kSub * ld + tj * kF, ld);
      wmma::mma_sync(acc, p, vf, acc);
    }
    for (int kk = 0; kk < k_steps; ++kk) {  // inter-chunk: R^ S_c
      wmma::fragment<wmma::matrix_a, kF, kF, kF, nv_bf16, wmma::row_major> q;
      wmma::fragment<wmma::matrix_b, kF, kF, kF, nv_bf16, wmma::row_major> sf;
      wmma::load_matrix_sync(q, r_s + query_sub * kSub * ld + kk * kF, ld);
      wmma::load_matrix_sync(sf, s_in + static_cast<std::int64_t>(kk * kF) * dim + tj * kF, dim);
      wmma::mma_sync(acc, q, sf, acc);
    }
    wmma::store_matrix_sync(stage, acc, kF, wmma::mem_row_major);
    __syncwarp();
    nv_bf16* o = out + first + static_cast<std::int64_t>(query_sub * kSub) * dim + tj * kF;
    const int live_rows = rows - query_sub * kSub;  // rows past the sequence are dropped
    if (live_rows >= kF) {
      // `first` and dim are multiples of 16 elements: 16-byte aligned rows.
      store_tile_bf16(stage, o, dim, lane);
    } else {
      for (int e = lane; e < kF * kF; e += 32) {
        const int m = e / kF, j = e % kF;
        if (m < live_rows) o[static_cast<std::int64_t>(m) * dim + j] = __float2bfloat16_rn(stage[e]);
      }
    }
    __syncwarp();  // the next tile's store overwrites the staging tile
  }
}

}  // namespace

void configure_rwkv6_chunked(const Rwkv6ChunkPlan& plan) {
  allow_dynamic_shared_memory(rwkv6_chunk_state_kernel, plan.state_layout.bytes);
  allow_dynamic_shared_memory(rwkv6_chunk_output_kernel, plan.output_layout.bytes);
}

Rwkv6ChunkResidency rwkv6_chunk_residency(const Rwkv6ChunkPlan& plan) {
  Rwkv6ChunkResidency residency;
  ARCH_BENCH_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &residency.state_blocks, rwkv6_chunk_state_kernel, plan.threads, plan.state_layout.bytes));
  ARCH_BENCH_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &residency.output_blocks, rwkv6_chunk_output_kernel, plan.threads, plan.output_layout.bytes));
  return residency;
}

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
