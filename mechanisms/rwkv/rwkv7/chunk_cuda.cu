// RWKV-7's chunkwise prefill on tensor cores, bf16 storage (the algebra, the geometry and the bytes:
// chunk_plan.hpp; the same arithmetic replayed on the CPU: chunk_replay.cpp). Two kernels on one
// stream, as common/chunk_delta_rule.cuh: (1) "prepare", per (head, chunk) in parallel, everything
// that does not depend on the state entering the chunk; (2) "pass", per (head, value tile), the
// chunks in order with the block's columns of H in shared memory. The decays are per key channel,
// so unlike the gated delta rule's scalar gate they cannot be applied to a whole score tile: they
// are factorised into the rows (A^ = a e_{t-1}, R^ = r e_t) and columns (B' = b / e_s, K' = k / e_s)
// of the score products, bounded because RWKV-7's |log w| <= e^{-0.5}. bf16 operands, fp32
// accumulators; expf (not __expf), as rwkv7/cuda.cu.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>
#include <utility>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/chunk_async_rows.cuh"
#include "mechanisms/common/chunk_pass_occupancy.hpp"
#include "mechanisms/common/chunk_wmma.cuh"
#include "mechanisms/common/dynamic_shared_memory.cuh"
#include "mechanisms/rwkv/rwkv7/chunk_cuda.hpp"

namespace arch_bench {

namespace {

using nv_bf16 = __nv_bfloat16;
// The pieces the chunkwise kernels share with common/chunk_delta_rule.cuh: the block's (head,
// index), regions of dynamic shared memory, row copies, the state columns, the wmma tile steps.
using namespace chunk_wmma;

constexpr int kC = kRwkv7ChunkTokens;
static_assert(kRwkv7ChunkFragment == kF, "the plan's fragment is chunk_wmma's");
constexpr int kTiles = kC / kF;                          // row tiles of a chunk
constexpr int kLowerTiles = kTiles * (kTiles + 1) / 2;   // tiles of a C x C on or below the diagonal
constexpr float kDecayScale = 0.60653065971263342f;      // e^{-0.5}, as kRwkv7DecayScale

struct Inputs {
  const nv_bf16* __restrict__ r;
  const nv_bf16* __restrict__ w_raw;
  const nv_bf16* __restrict__ k;
  const nv_bf16* __restrict__ v;
  const nv_bf16* __restrict__ kappa;
  const nv_bf16* __restrict__ iclr;
};

// (1) One block per (head, chunk).
__global__ void __launch_bounds__(kRwkv7ChunkPrepareThreads)
    rwkv7_chunk_prepare_kernel(Rwkv7ChunkPlan plan, Inputs x, nv_bf16* __restrict__ workspace,
                               float* __restrict__ chunk_decay) {
  const Rwkv7ChunkPrepareLayout& at = plan.prepare_layout;
  auto* e_s = shared_region<float>(at.decay);
  auto* a_tile = shared_region<nv_bf16>(at.a);
  auto* r_tile = shared_region<nv_bf16>(at.r);
  auto* b_tile = shared_region<nv_bf16>(at.b);
  auto* k_tile = shared_region<nv_bf16>(at.k);
  auto* scores = shared_region<float>(at.scores);
  auto* t_tile = shared_region<nv_bf16>(at.t);
  auto* acc_tile = shared_region<float>(at.acc);

  const HeadIndex hc = head_index_of_block(plan.chunks);
  const std::int64_t bh = hc.bh, chunk = hc.index;
  const int dim = plan.dim, ld = plan.ld_k, lds = plan.ld_score;
  const std::int64_t first = (bh * plan.tokens + chunk * kC) * dim;  // the chunk's first element
  const int rows = rwkv7_chunk_rows(plan.tokens, chunk);
  const int warp = static_cast<int>(threadIdx.x / 32), warps = static_cast<int>(blockDim.x / 32);
  nv_bf16* w_out = workspace + plan.w_offset() + rwkv7_chunk_offset(plan, bh, chunk, dim);
  nv_bf16* r_out = workspace + plan.r_offset() + rwkv7_chunk_offset(plan, bh, chunk, dim);
  nv_bf16* b_out = workspace + plan.b_offset() + rwkv7_chunk_offset(plan, bh, chunk, dim);
  nv_bf16* k_out = workspace + plan.k_offset() + rwkv7_chunk_offset(plan, bh, chunk, dim);
  nv_bf16* m_out = workspace + plan.m_offset() + rwkv7_chunk_offset(plan, bh, chunk, kC);
  nv_bf16* p_rb_out = workspace + plan.p_rb_offset() + rwkv7_chunk_offset(plan, bh, chunk, kC);
  nv_bf16* p_rk_out = workspace + plan.p_rk_offset() + rwkv7_chunk_offset(plan, bh, chunk, kC);

  // The chunk's raw inputs into shared memory, every copy issued at once (cp.async, 16 bytes each),
  // so that the block waits on global memory once rather than once per loop trip below: r, k,
  // kappa and iclr into the tiles their forms replace (each thread rewrites only the elements it
  // reads), w into the score blocks' memory (C x ld_k bf16 fit in it; unused until the scores).
  // v is not staged: only the pass reads it (its value tile, in M V).
  auto* w_raw = shared_region<nv_bf16>(at.scores);
  chunk_async::copy_rows_async(w_raw, ld, x.w_raw + first, dim, rows, dim);
  chunk_async::copy_rows_async(r_tile, ld, x.r + first, dim, rows, dim);
  chunk_async::copy_rows_async(k_tile, ld, x.k + first, dim, rows, dim);
  chunk_async::copy_rows_async(a_tile, ld, x.kappa + first, dim, rows, dim);
  chunk_async::copy_rows_async(b_tile, ld, x.iclr + first, dim, rows, dim);
  cp_async::commit();
  cp_async::wait<0>();
  __syncthreads();

  // e_t: the running product of w over the chunk's tokens, by the channel's thread in token order
  // (the order the replay multiplies in); flat past the sequence (w = 1 there), so row C - 1 is the
  // chunk's whole decay.
  if (threadIdx.x < dim) {
    const int c = static_cast<int>(threadIdx.x);
    float running = 1.0f;
#pragma unroll 8
    for (int m = 0; m < kC; ++m) {
      if (m < rows) running *= expf(-kDecayScale / (1.0f + expf(-__bfloat162float(w_raw[m * ld + c]))));
      e_s[m * dim + c] = running;
    }
  }
  __syncthreads();

  // The factorised rows and columns of the scores (shared memory, in place of the raw inputs) and
  // the pass's R^, B~, K~ (workspace). Rows past the sequence (never copied) read nothing and
  // are 0 everywhere.
  const float* e_last = e_s + (kC - 1) * dim;
  for (int e = threadIdx.x; e < kC * dim; e += blockDim.x) {
    const int m = e / dim, c = e % dim, at_tile = m * ld + c;
    const bool live = m < rows;
    const float et = e_s[e], before = m > 0 ? e_s[e - dim] : 1.0f;
    const float kap = live ? __bfloat162float(a_tile[at_tile]) : 0.0f;
    const float b = live ? kap * __bfloat162float(b_tile[at_tile]) : 0.0f;
    const float kk = live ? __bfloat162float(k_tile[at_tile]) : 0.0f;
    const float rr = live ? __bfloat162float(r_tile[at_tile]) : 0.0f;
    const float to_last = e_last[c] / et;  // <= 1: a later token has decayed less by the chunk's end
    const nv_bf16 r_hat = __float2bfloat16_rn(rr * et);
    a_tile[at_tile] = __float2bfloat16_rn(-kap * before);
    r_tile[at_tile] = r_hat;
    b_tile[at_tile] = __float2bfloat16_rn(b / et);
    k_tile[at_tile] = __float2bfloat16_rn(kk / et);
    r_out[e] = r_hat;
    b_out[e] = __float2bfloat16_rn(b * to_last);
    k_out[e] = __float2bfloat16_rn(kk * to_last);
  }
  __syncthreads();

  // The four score blocks X Y^T, X in {A^, R^}, Y in {B', K'} (product p = 2 x + y), the tiles on or
  // below the diagonal only (those above are wholly masked and never read).
  for (int job = warp; job < 4 * kLowerTiles; job += warps) {
    const int product = job / kLowerTiles;
    int ti, tj;
    lower_tile(job % kLowerTiles, ti, tj);
    const nv_bf16* left = product < 2 ? a_tile : r_tile;
    const nv_bf16* right = product % 2 == 0 ? b_tile : k_tile;
    Accumulator acc = zero_accumulator();
    mma_abt_panel(acc, left, ld, right, ld, ti, tj, dim / kF);
    store_tile(scores + (product * kC + ti * kF) * lds + tj * kF, acc, lds);
  }
  __syncthreads();

  // Masks: A_ab and A_ak strictly lower (fp32, in place), Q_rb and Q_rk lower with the diagonal,
  // rounded to bf16 into the workspace. Above the diagonal nothing is read.
  float* a_ab = scores;
  float* a_ak = scores + kC * lds;
  const float* q_rb = scores + 2 * kC * lds;
  const float* q_rk = scores + 3 * kC * lds;
  for (int e = threadIdx.x; e < kC * kC; e += blockDim.x) {
    const int t = e / kC, s = e % kC;
    if (s >= t) {
      a_ab[t * lds + s] = 0.0f;
      a_ak[t * lds + s] = 0.0f;
    }
    p_rb_out[e] = __float2bfloat16_rn(s <= t ? q_rb[t * lds + s] : 0.0f);
    p_rk_out[e] = __float2bfloat16_rn(s <= t ? q_rk[t * lds + s] : 0.0f);
  }
  __syncthreads();

  // [T | M] = (I - A_ab)^{-1} [I | A_ak]: column c by thread c, forward substitution in fp32
  // registers, x_i = rhs_i + sum_{j<i} A_ab[i][j] x_j (A_ab's rows are broadcast reads). T stays
  // here for W; M goes to the workspace for the pass's M V.
  if (threadIdx.x < 2 * kC) {
    const int c = static_cast<int>(threadIdx.x);
    // One store per row, to shared memory (T) or the workspace (M) through one pointer: a branch
    // between the two inside the unrolled rows cost ptxas a spill.
    nv_bf16* column = c < kC ? t_tile + c : m_out + (c - kC);
    const int column_ld = c < kC ? plan.ld_c : kC;
    float xs[kC];
#pragma unroll
    for (int i = 0; i < kC; ++i) {
      float sum = c < kC ? (i == c ? 1.0f : 0.0f) : a_ak[i * lds + c - kC];
#pragma unroll
      for (int j = 0; j < i; ++j) sum = fmaf(a_ab[i * lds + j], xs[j], sum);
      xs[i] = sum;
      column[i * column_ld] = __float2bfloat16_rn(sum);
    }
  }
  __syncthreads();

  // W = T A^ through acc_tile to the workspace. T is lower triangular: row tile ti sums over token
  // tiles kk <= ti only.
  for_warp_tiles(kTiles, dim / kF, [&](int ti, int tj) {
    Accumulator acc = zero_accumulator();
    mma_ab_panel(acc, t_tile, plan.ld_c, a_tile, ld, ti, tj, ti + 1);
    store_tile(acc_tile + ti * kF * plan.ld_acc + tj * kF, acc, plan.ld_acc);
  });
  __syncthreads();
  round_rows(w_out, acc_tile, plan.ld_acc, kC, dim);
  float* decay_out = chunk_decay + rwkv7_chunk_decay_offset(plan, bh, chunk);
  for (int c = threadIdx.x; c < dim; c += blockDim.x) decay_out[c] = e_last[c];
}

// The pass kernel's copies of chunk `chunk`'s operands into the stage at byte offset `stage`: the
// workspace's W, R^, B~, K~, M, P_rb, P_rk, V's value tile from the input (zeros past the sequence)
// and e_last; issued and committed as one group of this thread's cp.async copies, not waited for.
__device__ __forceinline__ void issue_pass_operands(const Rwkv7ChunkPlan& plan, const nv_bf16* __restrict__ v,
                                                    const nv_bf16* __restrict__ workspace,
                                                    const float* __restrict__ chunk_decay, std::size_t stage,
                                                    std::int64_t bh, std::int64_t chunk, int j0) {
  using chunk_async::copy_rows_async;
  const Rwkv7ChunkPassOperands& at = plan.pass_operands;
  const int dim = plan.dim, ld = plan.ld_k, n = plan.value_tile;
  copy_rows_async(shared_region<nv_bf16>(stage + at.w), ld,
                  workspace + plan.w_offset() + rwkv7_chunk_offset(plan, bh, chunk, dim), dim, kC, dim);
  copy_rows_async(shared_region<nv_bf16>(stage + at.r), ld,
                  workspace + plan.r_offset() + rwkv7_chunk_offset(plan, bh, chunk, dim), dim, kC, dim);
  copy_rows_async(shared_region<nv_bf16>(stage + at.b), ld,
                  workspace + plan.b_offset() + rwkv7_chunk_offset(plan, bh, chunk, dim), dim, kC, dim);
  copy_rows_async(shared_region<nv_bf16>(stage + at.k), ld,
                  workspace + plan.k_offset() + rwkv7_chunk_offset(plan, bh, chunk, dim), dim, kC, dim);
  copy_rows_async(shared_region<nv_bf16>(stage + at.m), plan.ld_c,
                  workspace + plan.m_offset() + rwkv7_chunk_offset(plan, bh, chunk, kC), kC, kC, kC);
  copy_rows_async(shared_region<nv_bf16>(stage + at.p_rb), plan.ld_c,
                  workspace + plan.p_rb_offset() + rwkv7_chunk_offset(plan, bh, chunk, kC), kC, kC, kC);
  copy_rows_async(shared_region<nv_bf16>(stage + at.p_rk), plan.ld_c,
                  workspace + plan.p_rk_offset() + rwkv7_chunk_offset(plan, bh, chunk, kC), kC, kC, kC);
  // V's value tile straight from the input, 16 bytes at a time (dim and j0 are multiples of 16),
  // zero past the sequence (no byte read there; the address stays the chunk's first row).
  const int rows = rwkv7_chunk_rows(plan.tokens, chunk);
  const std::int64_t first_row = bh * plan.tokens + chunk * kC;
  auto* v_tile = shared_region<nv_bf16>(stage + at.v);
  for (int e = threadIdx.x; e < kC * (n / 8); e += blockDim.x) {
    const int m = e / (n / 8), c = e % (n / 8);
    const bool live = m < rows;
    cp_async::copy_16_or_zeros(v_tile + m * plan.ld_n + c * 8,
                                        v + (first_row + (live ? m : 0)) * dim + j0 + c * 8, live);
  }
  chunk_async::copy_floats_async(shared_region<float>(stage + at.decay),
                                 chunk_decay + rwkv7_chunk_decay_offset(plan, bh, chunk), dim);
  cp_async::commit();
}

// (2) One block per (head, value tile): the block's columns of H (fp32, shared memory) walk the
// chunks in order. Per chunk, with H_0 rounded to bf16 as the operand:
//   U = W H_0 + M V;  O = R^ H_0 + P_rb U + P_rk V;  H = diag(e_last) H_0 + B~^T U + K~^T V.
// The operands (W, R^, B~, K~, M, P_rb, P_rk, V's tile, e_last) are double-buffered: chunk c + 1's
// are copied (cp.async) into one stage while chunk c's products read the other, so a chunk waits on
// global memory only where its copies, issued a whole chunk earlier, have not landed. The
// arithmetic is the unbuffered kernel's, operation for operation (the CPU replay's).
// `state` [batch_heads][dim][dim] holds the state before the first token and receives the state
// after the last.
__global__ void __launch_bounds__(kRwkv7ChunkPassThreads, chunk_pass_blocks_by_registers(kRwkv7ChunkPassThreads))
    rwkv7_chunk_pass_kernel(Rwkv7ChunkPlan plan, const nv_bf16* __restrict__ v, const nv_bf16* __restrict__ workspace,
                            const float* __restrict__ chunk_decay, float* __restrict__ state,
                            nv_bf16* __restrict__ out) {
  const Rwkv7ChunkPassLayout& at = plan.pass_layout;
  const Rwkv7ChunkPassOperands& op = plan.pass_operands;
  auto* u_tile = shared_region<nv_bf16>(at.u);
  auto* s = shared_region<float>(at.s);
  auto* s_operand = shared_region<nv_bf16>(at.s_operand);
  auto* acc_tile = shared_region<float>(at.acc);

  const HeadIndex ht = head_index_of_block(plan.value_tiles);
  const std::int64_t bh = ht.bh;
  const int dim = plan.dim, n = plan.value_tile, ld = plan.ld_k, ldn = plan.ld_n, lds = plan.ld_s;
  const int j0 = static_cast<int>(ht.index) * n;
  const int tiles_n = n / kF, tiles_k = dim / kF;
  float* head_state = state + bh * dim * dim;

  issue_pass_operands(plan, v, workspace, chunk_decay, plan.pass_stage(0), bh, 0, j0);
  load_state_columns(s, lds, head_state, dim, j0, dim, n);

  for (std::int64_t chunk = 0; chunk < plan.chunks; ++chunk) {
    const int rows = rwkv7_chunk_rows(plan.tokens, chunk);
    const std::int64_t first_row = bh * plan.tokens + chunk * kC;  // the chunk's first token row
    // Chunk c + 1's copies go to the stage chunk c - 1's products read, all before the barrier that
    // ended them (or, at c = 0, no chunk's); past the last chunk an empty group keeps the count of
    // groups in flight the same every chunk.
    if (chunk + 1 < plan.chunks) {
      issue_pass_operands(plan, v, workspace, chunk_decay, plan.pass_stage(chunk + 1), bh, chunk + 1, j0);
    } else {
      cp_async::commit();
    }
    const std::size_t stage = plan.pass_stage(chunk);
    const auto* w_tile = shared_region<nv_bf16>(stage + op.w);
    const auto* r_tile = shared_region<nv_bf16>(stage + op.r);
    const auto* b_tile = shared_region<nv_bf16>(stage + op.b);
    const auto* k_tile = shared_region<nv_bf16>(stage + op.k);
    const auto* m_tile = shared_region<nv_bf16>(stage + op.m);
    const auto* p_rb = shared_region<nv_bf16>(stage + op.p_rb);
    const auto* p_rk = shared_region<nv_bf16>(stage + op.p_rk);
    const auto* v_tile = shared_region<nv_bf16>(stage + op.v);
    const auto* carry = shared_region<float>(stage + op.decay);
    cp_async::wait<1>();  // this thread's copies of chunk c (only chunk c + 1's may be in flight)
    __syncthreads();                // everyone's: chunk c's operands (e_last among them) and H are in place

    // H_0 as the bf16 operand, and H scaled by the chunk's decay in place (row i = key channel i):
    // the accumulator the state update adds to.
    for (int e = threadIdx.x; e < dim * n; e += blockDim.x) {
      const int i = e / n, j = e % n;
      const float h = s[i * lds + j];
      s_operand[i * ldn + j] = __float2bfloat16_rn(h);
      s[i * lds + j] = h * carry[i];
    }
    __syncthreads();

    // U = W H_0 + M V into acc_tile (M is strictly lower triangular: kk <= ti), then rounded to bf16.
    for_warp_tiles(kTiles, tiles_n, [&](int ti, int tj) {
      Accumulator acc = zero_accumulator();
      mma_ab_panel(acc, w_tile, ld, s_operand, ldn, ti, tj, tiles_k);
      mma_ab_panel(acc, m_tile, plan.ld_c, v_tile, ldn, ti, tj, ti + 1);
      store_tile(acc_tile + ti * kF * lds + tj * kF, acc, lds);
    });
    __syncthreads();
    for (int e = threadIdx.x; e < kC * n; e += blockDim.x) {
      const int m = e / n, j = e % n;
      u_tile[m * ldn + j] = __float2bfloat16_rn(acc_tile[m * lds + j]);
    }
    __syncthreads();

    // O = R^ H_0 + P_rb U + P_rk V into acc_tile (P_rb and P_rk are lower triangular: row tile ti
    // sums kk <= ti only), and
    // H = diag(e_last) H_0 + B~^T U + K~^T V in place on the fp32 H.
    // The P_rb U and P_rk V steps interleave per kk (one, then the other): the kernel's summation order.
    for_warp_tiles(kTiles, tiles_n, [&](int ti, int tj) {
      Accumulator acc = zero_accumulator();
      mma_ab_panel(acc, r_tile, ld, s_operand, ldn, ti, tj, tiles_k);
      for (int kk = 0; kk <= ti; ++kk) {
        mma_ab(acc, p_rb + ti * kF * plan.ld_c + kk * kF, plan.ld_c, u_tile + kk * kF * ldn + tj * kF, ldn);
        mma_ab(acc, p_rk + ti * kF * plan.ld_c + kk * kF, plan.ld_c, v_tile + kk * kF * ldn + tj * kF, ldn);
      }
      store_tile(acc_tile + ti * kF * lds + tj * kF, acc, lds);
    });
    // B~^T U and K~^T V interleave the same way.
    for_warp_tiles(tiles_k, tiles_n, [&](int ti, int tj) {
      Accumulator acc;
      float* s_at = s + ti * kF * lds + tj * kF;
      wmma::load_matrix_sync(acc, s_at, lds, wmma::mem_row_major);
      for (int kk = 0; kk < kTiles; ++kk) {
        mma_atb(acc, b_tile + kk * kF * ld + ti * kF, ld, u_tile + kk * kF * ldn + tj * kF, ldn);
        mma_atb(acc, k_tile + kk * kF * ld + ti * kF, ld, v_tile + kk * kF * ldn + tj * kF, ldn);
      }
      store_tile(s_at, acc, lds);
    });
    __syncthreads();

    // O rounded to bf16, the sequence's rows only. The next chunk issues its copies into this
    // chunk's stage and rewrites H's bf16 copy (all read before the barrier above); acc_tile is next
    // written after the barriers that follow.
    for (int e = threadIdx.x; e < rows * n; e += blockDim.x) {
      const int m = e / n, j = e % n;
      out[(first_row + m) * dim + j0 + j] = __float2bfloat16_rn(acc_tile[m * lds + j]);
    }
  }
  cp_async::wait<0>();  // no copy outlives the block (the last group is empty)

  store_state_columns(head_state, dim, j0, s, lds, dim, n);
}

}  // namespace

void configure_rwkv7_chunked(const Rwkv7ChunkPlan& plan) {
  allow_dynamic_shared_memory(rwkv7_chunk_prepare_kernel, plan.prepare_layout.bytes);
  allow_dynamic_shared_memory(rwkv7_chunk_pass_kernel, plan.pass_layout.bytes);
}

void launch_rwkv7_chunked(const Rwkv7ChunkPlan& plan, const RwkvTokens<bf16>& x, float* state, float* workspace,
                          bf16* out, CUstream_st* stream) {
  if (plan.tokens == 0 || plan.batch_heads == 0) return;  // nothing to fold in; H unchanged
  for (const auto& [row, name] : {std::pair<const void*, const char*>{x.r, "rwkv7's r"}, {x.decay, "rwkv7's w"},
                                  {x.k, "rwkv7's k"}, {x.v, "rwkv7's v"}, {x.kappa, "rwkv7's kappa"},
                                  {x.iclr, "rwkv7's iclr"}}) {
    chunk_async::require_16_byte_aligned(row, name);
  }
  auto* bf16_workspace = reinterpret_cast<nv_bf16*>(workspace);
  auto* chunk_decay = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(workspace) + plan.decay_byte_offset());
  const Inputs in{reinterpret_cast<const nv_bf16*>(x.r),     reinterpret_cast<const nv_bf16*>(x.decay),
                  reinterpret_cast<const nv_bf16*>(x.k),     reinterpret_cast<const nv_bf16*>(x.v),
                  reinterpret_cast<const nv_bf16*>(x.kappa), reinterpret_cast<const nv_bf16*>(x.iclr)};
  rwkv7_chunk_prepare_kernel<<<static_cast<unsigned>(plan.prepare_blocks), kRwkv7ChunkPrepareThreads,
                               plan.prepare_layout.bytes, stream>>>(plan, in, bf16_workspace, chunk_decay);
  check_launch("rwkv7_chunk_prepare_kernel");
  rwkv7_chunk_pass_kernel<<<static_cast<unsigned>(plan.pass_blocks), kRwkv7ChunkPassThreads, plan.pass_layout.bytes,
                            stream>>>(plan, in.v, bf16_workspace, chunk_decay, state, reinterpret_cast<nv_bf16*>(out));
  check_launch("rwkv7_chunk_pass_kernel");
}

}  // namespace arch_bench
