#pragma once
// The chunkwise tensor-core prefill of the gated delta rule (the algebra and the geometry:
// chunk_delta_rule_plan.hpp), written once for Gated DeltaNet (and, with its own operands, for
// later delta-rule mechanisms). A mechanism supplies an operand policy, a struct of force-inlined
// device functions:
//   float log_decay(bh, t), beta_at(bh, t)             log a_t (<= 0) and beta_t of head bh, token t
//   const __nv_bfloat16* q_row(bh, t), k_row(bh, t), v_row(bh, t)   the token's operands: dk (q, k)
//                                                      or dv (v) bf16, contiguous, 16-byte aligned,
//                                                      and token t + 1's row right after token t's
//                                                      (a chunk's rows are one run of memory)
//   float query_factor(float sum), key_factor(float sum)  the factor a row is scaled by, given its
//                                                      sum of squares (Gated DeltaNet: L2 norms)
//   void store(bh, t, j, float o)                      o_t[j] (the mechanism's epilogue)
// and launches the two kernels below in order on one stream (launch_chunk_delta_rule). Every index a
// policy is called with is inside the sequence: a tail chunk is zero-padded, never read past L.
//
// Products on tensor cores: wmma 16 x 16 x 16, bf16 operands, fp32 accumulators. Operands are
// rounded to bf16 once each (the normalised and decayed Q and K, T, W, U, P, V' and S as an
// operand); the gates, A, the triangular solve and the carried state stay fp32. The same roundings
// replayed on the CPU meet bf16's tolerance against the fp64 reference
// (tests/test_chunk_delta_rule_replay.cpp).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstddef>
#include <cstdint>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/chunk_async_rows.cuh"
#include "mechanisms/common/chunk_delta_rule_plan.hpp"
#include "mechanisms/common/chunk_log_decay.cuh"
#include "mechanisms/common/chunk_pass_occupancy.hpp"
#include "mechanisms/common/chunk_wmma.cuh"
#include "mechanisms/common/dynamic_shared_memory.cuh"

namespace arch_bench {

namespace delta_rule_detail {

using namespace chunk_wmma;  // tile steps, fragments, block indices, shared regions, row copies

inline constexpr int kC = kDeltaRuleChunk;
static_assert(kDeltaRuleFragment == kF, "the plan's fragment is chunk_wmma's");
static_assert(kC == kLogDecayScanTokens, "cumulative_log_decay scans 64 tokens");
inline constexpr int kTiles = kC / kF;                       // row tiles of a chunk
inline constexpr int kLowerTiles = kTiles * (kTiles + 1) / 2;  // tiles of a C x C on or below the diagonal
inline constexpr int kLdA = kC + kDeltaRuleFloatPad;         // A's row stride (the plan's ld_a)
inline constexpr int kRowValuesPerLane = kDeltaRuleMaxDim / 32;
inline constexpr int kSolveSums = 4;  // partial sums per row of the solve

// b[0..C): the inclusive cumulative log-decay of the chunk's tokens (chunk_log_decay.cuh), and
// beta[0..C), both 0 past the sequence (b stays flat over the padding, so b[C-1] is the chunk's
// total; a padded token writes nothing). Warp 0 only.
template <class Policy>
__device__ __forceinline__ void chunk_gates(const Policy& policy, float* __restrict__ b, float* __restrict__ beta,
                                            std::int64_t bh, std::int64_t first, int rows) {
  if (threadIdx.x >= 32) return;
  // beta read before the scan, so that its loads and the decays' are in flight together.
  const int m0 = 2 * static_cast<int>(threadIdx.x), m1 = m0 + 1;
  const float beta0 = m0 < rows ? policy.beta_at(bh, first + m0) : 0.0f;
  const float beta1 = m1 < rows ? policy.beta_at(bh, first + m1) : 0.0f;
  cumulative_log_decay(policy, b, bh, first, rows);
  beta[m0] = beta0;
  beta[m1] = beta1;
}

}  // namespace delta_rule_detail

// (1) One block per (head, chunk): everything of the chunk that does not depend on the state
// entering it, into the workspace (bf16, C rows per chunk whatever its length): W, K~, Q~, P, U,
// and b_last into chunk_log_decay.
template <class Policy>
__global__ void __launch_bounds__(kDeltaRulePrepareThreads)
    delta_rule_prepare_kernel(ChunkDeltaRulePlan plan, Policy policy, __nv_bfloat16* __restrict__ workspace,
                              float* __restrict__ chunk_log_decay) {
  using namespace delta_rule_detail;
  const DeltaRulePrepareLayout& at = plan.prepare_layout;
  auto* q_tile = shared_region<__nv_bfloat16>(at.q);
  auto* k_tile = shared_region<__nv_bfloat16>(at.k);
  auto* k_scaled = shared_region<__nv_bfloat16>(at.k_scaled);
  auto* v_tile = shared_region<__nv_bfloat16>(at.v);
  auto* t_tile = shared_region<__nv_bfloat16>(at.t);
  auto* a_tile = shared_region<float>(at.a);
  auto* acc_tile = shared_region<float>(at.acc);
  auto* b = shared_region<float>(at.decay);
  auto* beta = shared_region<float>(at.beta);

  const HeadIndex hc = head_index_of_block(plan.chunks);
  const std::int64_t bh = hc.bh, chunk = hc.index;
  const std::int64_t first = chunk * kC;
  const int rows = delta_rule_chunk_rows(plan.tokens, chunk);
  const int dk = plan.dk, dv = plan.dv;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  __nv_bfloat16* w_out = workspace + plan.w_offset() + delta_rule_chunk_offset(plan, bh, chunk, dk);
  __nv_bfloat16* k_out = workspace + plan.k_offset() + delta_rule_chunk_offset(plan, bh, chunk, dk);
  __nv_bfloat16* q_out = workspace + plan.q_offset() + delta_rule_chunk_offset(plan, bh, chunk, dk);
  __nv_bfloat16* p_out = workspace + plan.p_offset() + delta_rule_chunk_offset(plan, bh, chunk, kC);
  __nv_bfloat16* u_out = workspace + plan.u_offset() + delta_rule_chunk_offset(plan, bh, chunk, dv);

  // The chunk's raw q, k and v rows into q_tile, k_tile and v_tile, every copy issued at once
  // (cp.async, 16 bytes each) so that the block waits on global memory once, while warp 0 reads the
  // gates, rather than once per token and warp.
  if (rows > 0) {
    chunk_async::copy_rows_async(q_tile, plan.ld_k, policy.q_row(bh, first), dk, rows, dk);
    chunk_async::copy_rows_async(k_tile, plan.ld_k, policy.k_row(bh, first), dk, rows, dk);
    chunk_async::copy_rows_async(v_tile, plan.ld_v, policy.v_row(bh, first), dv, rows, dv);
  }
  cp_async::commit();
  chunk_gates(policy, b, beta, bh, first, rows);
  cp_async::wait<0>();
  __syncthreads();
  const float b_last = b[kC - 1];

  // One warp per token: the row's sum of squares by shuffles, then its forms (normalised Q and K
  // for the scores, in place of the raw rows: each lane rewrites only the elements it read,
  // diag(exp(b)) K for W, and Q~ and K~ for the pass straight to the workspace). Rows past the
  // sequence are 0 everywhere.
  const __nv_bfloat16 zero = __float2bfloat16_rn(0.0f);
  for (int m = warp; m < kC; m += warps) {
    if (m < rows) {
      float qx[kRowValuesPerLane], kx[kRowValuesPerLane];
      float q_sum = 0.0f, k_sum = 0.0f;
#pragma unroll
      for (int e = 0; e < kRowValuesPerLane; ++e) {
        const int i = lane + 32 * e;
        qx[e] = i < dk ? __bfloat162float(q_tile[m * plan.ld_k + i]) : 0.0f;
        kx[e] = i < dk ? __bfloat162float(k_tile[m * plan.ld_k + i]) : 0.0f;
        q_sum = fmaf(qx[e], qx[e], q_sum);
        k_sum = fmaf(kx[e], kx[e], k_sum);
      }
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) {
        q_sum += __shfl_xor_sync(0xffffffffu, q_sum, offset);
        k_sum += __shfl_xor_sync(0xffffffffu, k_sum, offset);
      }
      const float q_factor = policy.query_factor(q_sum), k_factor = policy.key_factor(k_sum);
      // expf, not __expf: exp(b) compounds a chunk's gates and the error would grow with them.
      const float up = expf(b[m]), to_last = expf(b_last - b[m]);
#pragma unroll
      for (int e = 0; e < kRowValuesPerLane; ++e) {
        const int i = lane + 32 * e;
        if (i >= dk) continue;
        const float qn = qx[e] * q_factor, kn = kx[e] * k_factor;
        q_tile[m * plan.ld_k + i] = __float2bfloat16_rn(qn);
        k_tile[m * plan.ld_k + i] = __float2bfloat16_rn(kn);
        k_scaled[m * plan.ld_k + i] = __float2bfloat16_rn(kn * up);
        q_out[m * dk + i] = __float2bfloat16_rn(qn * up);
        k_out[m * dk + i] = __float2bfloat16_rn(kn * to_last);
      }
    } else {
      for (int i = lane; i < dk; i += 32) {
        q_tile[m * plan.ld_k + i] = zero;
        k_tile[m * plan.ld_k + i] = zero;
        k_scaled[m * plan.ld_k + i] = zero;
        q_out[m * dk + i] = zero;
        k_out[m * dk + i] = zero;
      }
      for (int j = lane; j < dv; j += 32) v_tile[m * plan.ld_v + j] = zero;
    }
  }
  __syncthreads();

  // K K^T into a_tile and Q K^T into acc_tile, the tiles on or below the diagonal only (those above
  // are wholly masked and never read).
  for (int job = warp; job < 2 * kLowerTiles; job += warps) {
    const bool keys = job < kLowerTiles;
    int ti, tj;
    lower_tile(keys ? job : job - kLowerTiles, ti, tj);
    const __nv_bfloat16* left = keys ? k_tile : q_tile;
    Accumulator acc = zero_accumulator();
    mma_abt_panel(acc, left, plan.ld_k, k_tile, plan.ld_k, ti, tj, dk / kF);
    if (keys) {
      store_tile(a_tile + ti * kF * kLdA + tj * kF, acc, kLdA);
    } else {
      store_tile(acc_tile + ti * kF * plan.ld_acc + tj * kF, acc, plan.ld_acc);
    }
  }
  __syncthreads();

  // A_ij = beta_i (K K^T)_ij exp(b_i - b_j) strictly below the diagonal, else 0; P_ij =
  // (Q K^T)_ij exp(b_i - b_j) on and below it (<= 1: b falls along the chunk), else 0 (where the
  // exponent could overflow and the scores were never written).
  for (int e = threadIdx.x; e < kC * kC; e += blockDim.x) {
    const int i = e / kC, j = e % kC;
    const float gamma = j <= i ? expf(b[i] - b[j]) : 0.0f;
    a_tile[i * kLdA + j] = j < i ? beta[i] * a_tile[i * kLdA + j] * gamma : 0.0f;
    p_out[e] = __float2bfloat16_rn(j <= i ? acc_tile[i * plan.ld_acc + j] * gamma : 0.0f);
  }
  __syncthreads();

  // The UT transform: column c of X = (I + A)^-1 by forward substitution, X_ic = [i = c] -
  // sum_{j<i} A_ij X_jc, in thread c's registers (columns are independent; A's rows are broadcast
  // reads). Four partial sums per row: the chain of a row is otherwise i dependent FMAs.
  // T = X diag(beta), rounded to bf16 as the operand of W and U.
  if (threadIdx.x < kC) {
    const int c = static_cast<int>(threadIdx.x);
    const float beta_c = beta[c];
    float x[kC];
#pragma unroll
    for (int i = 0; i < kC; ++i) {
      float part[kSolveSums] = {i == c ? 1.0f : 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int j = 0; j < i; ++j) part[j % kSolveSums] = fmaf(-a_tile[i * kLdA + j], x[j], part[j % kSolveSums]);
      x[i] = (part[0] + part[1]) + (part[2] + part[3]);
      t_tile[i * plan.ld_c + c] = __float2bfloat16_rn(x[i] * beta_c);
    }
  }
  __syncthreads();

  // W = T diag(exp(b)) K, then U = T V, through acc_tile to the workspace. T is lower triangular:
  // row tile ti sums over key tiles kk <= ti only.
  for (int product = 0; product < 2; ++product) {
    const bool keys = product == 0;
    const int width = keys ? dk : dv, ld = keys ? plan.ld_k : plan.ld_v;
    const __nv_bfloat16* right = keys ? k_scaled : v_tile;
    for_warp_tiles(kTiles, width / kF, [&](int ti, int tj) {
      Accumulator acc = zero_accumulator();
      mma_ab_panel(acc, t_tile, plan.ld_c, right, ld, ti, tj, ti + 1);
      store_tile(acc_tile + ti * kF * plan.ld_acc + tj * kF, acc, plan.ld_acc);
    });
    __syncthreads();
    round_rows(keys ? w_out : u_out, acc_tile, plan.ld_acc, kC, width);
    __syncthreads();  // acc_tile is read: the next product may overwrite it
  }
  if (threadIdx.x == 0) chunk_log_decay[bh * plan.chunks + chunk] = b_last;
}

// The pass kernel's copies of chunk `chunk`'s operands into the stage at byte offset `stage`,
// issued and committed as one group of this thread's cp.async copies, not waited for.
__device__ __forceinline__ void issue_pass_operands(const ChunkDeltaRulePlan& plan,
                                                    const __nv_bfloat16* __restrict__ workspace, std::size_t stage,
                                                    std::int64_t bh, std::int64_t chunk, int j0) {
  using namespace delta_rule_detail;
  using chunk_async::copy_rows_async;
  const DeltaRulePassOperands& at = plan.pass_operands;
  const int dk = plan.dk, dv = plan.dv;
  copy_rows_async(shared_region<__nv_bfloat16>(stage + at.w), plan.ld_k,
                  workspace + plan.w_offset() + delta_rule_chunk_offset(plan, bh, chunk, dk), dk, kC, dk);
  copy_rows_async(shared_region<__nv_bfloat16>(stage + at.k), plan.ld_k,
                  workspace + plan.k_offset() + delta_rule_chunk_offset(plan, bh, chunk, dk), dk, kC, dk);
  copy_rows_async(shared_region<__nv_bfloat16>(stage + at.q), plan.ld_k,
                  workspace + plan.q_offset() + delta_rule_chunk_offset(plan, bh, chunk, dk), dk, kC, dk);
  copy_rows_async(shared_region<__nv_bfloat16>(stage + at.p), plan.ld_c,
                  workspace + plan.p_offset() + delta_rule_chunk_offset(plan, bh, chunk, kC), kC, kC, kC);
  copy_rows_async(shared_region<__nv_bfloat16>(stage + at.u), plan.ld_n,
                  workspace + plan.u_offset() + delta_rule_chunk_offset(plan, bh, chunk, dv) + j0, dv, kC,
                  plan.value_tile);
  cp_async::commit();
}

// (2) One block per (head, value tile): the block's columns of S (fp32, in shared memory) walk the
// chunks in order. Per chunk, with S_c rounded to bf16 as the operand:
//   V' = U - W S_c;  O = Q~ S_c + P V';  S_{c+1} = exp(b_last) S_c + K~^T V'.
// The operands (W, K~, Q~, P, U's tile) are double-buffered: chunk c + 1's are copied (cp.async)
// into one stage while chunk c's products read the other, so a chunk waits on global memory only
// where its copies, issued a whole chunk earlier, have not landed yet; b_last is loaded a chunk
// ahead into a register. The arithmetic is the unbuffered kernel's, operation for operation.
// `state` [batch_heads][dk][dv] holds the state before the first token and receives the state
// after the last.
template <class Policy>
__global__ void __launch_bounds__(kDeltaRulePassThreads, chunk_pass_blocks_by_registers(kDeltaRulePassThreads))
    delta_rule_pass_kernel(ChunkDeltaRulePlan plan, Policy policy, const __nv_bfloat16* __restrict__ workspace,
                           const float* __restrict__ chunk_log_decay, float* __restrict__ state) {
  using namespace delta_rule_detail;
  const DeltaRulePassLayout& at = plan.pass_layout;
  auto* v_new = shared_region<__nv_bfloat16>(at.v_new);
  auto* s = shared_region<float>(at.s);
  auto* s_operand = shared_region<__nv_bfloat16>(at.s_operand);
  auto* acc_tile = shared_region<float>(at.acc);

  const HeadIndex ht = head_index_of_block(plan.value_tiles);
  const std::int64_t bh = ht.bh;
  const int dk = plan.dk, dv = plan.dv, n = plan.value_tile;
  const int j0 = static_cast<int>(ht.index) * n;
  const int tiles_n = n / kF, tiles_k = dk / kF;
  float* head_state = state + bh * dk * dv;
  const float* head_log_decay = chunk_log_decay + bh * plan.chunks;

  issue_pass_operands(plan, workspace, plan.pass_stage(0), bh, 0, j0);
  float next_log_decay = head_log_decay[0];
  load_state_columns(s, plan.ld_s, head_state, dv, j0, dk, n);
  __syncthreads();

  for (std::int64_t chunk = 0; chunk < plan.chunks; ++chunk) {
    // Chunk c + 1's copies go to the stage chunk c - 1's products read, all before the barrier
    // that ended them (or, at c = 0, no chunk's); past the last chunk an empty group keeps the
    // count of groups in flight the same every chunk.
    const float log_decay = next_log_decay;
    if (chunk + 1 < plan.chunks) {
      issue_pass_operands(plan, workspace, plan.pass_stage(chunk + 1), bh, chunk + 1, j0);
      next_log_decay = head_log_decay[chunk + 1];
    } else {
      cp_async::commit();
    }
    const std::size_t stage = plan.pass_stage(chunk);
    const auto* w_tile = shared_region<__nv_bfloat16>(stage + plan.pass_operands.w);
    const auto* k_tile = shared_region<__nv_bfloat16>(stage + plan.pass_operands.k);
    const auto* q_tile = shared_region<__nv_bfloat16>(stage + plan.pass_operands.q);
    const auto* p_tile = shared_region<__nv_bfloat16>(stage + plan.pass_operands.p);
    const auto* u_tile = shared_region<__nv_bfloat16>(stage + plan.pass_operands.u);

    for (int e = threadIdx.x; e < dk * n; e += blockDim.x) {
      const int i = e / n, j = e % n;
      s_operand[i * plan.ld_n + j] = __float2bfloat16_rn(s[i * plan.ld_s + j]);
    }
    const float carry = expf(log_decay);
    cp_async::wait<1>();  // this thread's copies of chunk c (only chunk c + 1's may be in flight)
    __syncthreads();                // everyone's: chunk c's operands and S_c's bf16 copy are in place

    // W S_c into acc_tile.
    for_warp_tiles(kTiles, tiles_n, [&](int ti, int tj) {
      Accumulator acc = zero_accumulator();
      mma_ab_panel(acc, w_tile, plan.ld_k, s_operand, plan.ld_n, ti, tj, tiles_k);
      store_tile(acc_tile + ti * kF * plan.ld_s + tj * kF, acc, plan.ld_s);
    });
    __syncthreads();

    // V' = U - W S_c, in fp32, rounded once as the operand of P V' and K~^T V'.
    for (int e = threadIdx.x; e < kC * n; e += blockDim.x) {
      const int i = e / n, j = e % n;
      v_new[i * plan.ld_n + j] =
          __float2bfloat16_rn(__bfloat162float(u_tile[i * plan.ld_n + j]) - acc_tile[i * plan.ld_s + j]);
    }
    __syncthreads();

    // O = Q~ S_c + P V' into acc_tile (P is lower triangular: row tile ti sums kk <= ti only), and
    // S_{c+1} = exp(b_last) S_c + K~^T V' in place on the fp32 S (the operands read S_c's bf16 copy).
    for_warp_tiles(kTiles, tiles_n, [&](int ti, int tj) {
      Accumulator acc = zero_accumulator();
      mma_ab_panel(acc, q_tile, plan.ld_k, s_operand, plan.ld_n, ti, tj, tiles_k);
      mma_ab_panel(acc, p_tile, plan.ld_c, v_new, plan.ld_n, ti, tj, ti + 1);
      store_tile(acc_tile + ti * kF * plan.ld_s + tj * kF, acc, plan.ld_s);
    });
    for_warp_tiles(tiles_k, tiles_n, [&](int ti, int tj) {
      Accumulator acc;
      float* s_at = s + ti * kF * plan.ld_s + tj * kF;
      wmma::load_matrix_sync(acc, s_at, plan.ld_s, wmma::mem_row_major);
#pragma unroll
      for (int e = 0; e < acc.num_elements; ++e) acc.x[e] *= carry;  // a uniform scale: any element order
      mma_atb_panel(acc, k_tile, plan.ld_k, v_new, plan.ld_n, ti, tj, kTiles);  // K~^T V'
      store_tile(s_at, acc, plan.ld_s);
    });
    __syncthreads();

    const std::int64_t first = chunk * kC;
    const int rows = delta_rule_chunk_rows(plan.tokens, chunk);
    for (int e = threadIdx.x; e < rows * n; e += blockDim.x) {  // rows past the sequence are dropped
      const int i = e / n, j = e % n;
      policy.store(bh, first + i, j0 + j, acc_tile[i * plan.ld_s + j]);
    }
    // The next chunk writes S's bf16 copy (read before the barrier above) and issues its copies
    // into this chunk's stage (likewise); acc_tile is next written after its barrier.
  }
  cp_async::wait<0>();  // no copy outlives the block (the last group is empty)

  store_state_columns(head_state, dv, j0, s, plan.ld_s, dk, n);
}

// Once per plan, before the first launch (dynamic_shared_memory.cuh): lets each kernel take the
// plan's shared memory past 48 KiB.
template <class Policy>
void configure_chunk_delta_rule(const ChunkDeltaRulePlan& plan) {
  allow_dynamic_shared_memory(delta_rule_prepare_kernel<Policy>, plan.prepare_layout.bytes);
  allow_dynamic_shared_memory(delta_rule_pass_kernel<Policy>, plan.pass_layout.bytes);
}

// The two kernels in order on `stream`, each launch checked. `state` [batch_heads][dk][dv] (fp32)
// holds the state before the first token and receives the state after the last; `workspace`
// (plan.workspace_bf16_elements()) and `chunk_log_decay` (plan.workspace_decay_elements) are the
// plan's workspace.
template <class Policy>
void launch_chunk_delta_rule(const ChunkDeltaRulePlan& plan, const Policy& policy, float* state,
                             __nv_bfloat16* workspace, float* chunk_log_decay, CUstream_st* stream) {
  if (plan.tokens == 0 || plan.batch_heads == 0) return;  // nothing to fold in; S unchanged
  delta_rule_prepare_kernel<Policy>
      <<<static_cast<unsigned>(plan.prepare_blocks), kDeltaRulePrepareThreads, plan.prepare_layout.bytes, stream>>>(
          plan, policy, workspace, chunk_log_decay);
  check_launch("delta_rule_prepare_kernel");
  delta_rule_pass_kernel<Policy>
      <<<static_cast<unsigned>(plan.pass_blocks), kDeltaRulePassThreads, plan.pass_layout.bytes, stream>>>(
          plan, policy, workspace, chunk_log_decay, state);
  check_launch("delta_rule_pass_kernel");
}

}  // namespace arch_bench
