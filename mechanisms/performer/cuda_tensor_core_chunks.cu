// Stages 3 + 4 and 5 of Performer's bf16 prefill on tensor cores: the state entering each chunk,
// S_in(c + 1) = S_in(c) e^(M_in - M_end) + sum_{j in c} e^(c_j - M_end) phi(k_j) v_j^T with the key
// sums z likewise, in one pass over the chunks; and the outputs
// o_r = [phi(q_r) e^(M_in - M_r) S_in + sum_{j<=r} phi(q_r).phi(k_j) e^(c_j - M_r) v_j] / [the same
// with z and 1], as wmma bf16 16 x 16 x 16 products with fp32 accumulators. The weights are the
// SIMT path's (cuda_chunk_max.cuh); the features come as stage 1 stored them (bf16 phi(q), bf16
// hi + lo planes of phi(k): PerformerPrefillWorkspace); what is rounded to bf16 and why is in
// cuda_plan.hpp (PerformerPrefillPath), the shared layouts in PerformerTensorCore*Layout. The CPU
// replay of this arithmetic is cuda_replay.cpp. Compiled, not yet run on a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/performer/cuda.hpp"
#include "mechanisms/performer/cuda_chunk_max.cuh"

namespace arch_bench {

namespace {

using namespace nvcuda;
constexpr int kF = kPerformerTensorCoreFragment;
constexpr int kC = kChunkTile;
constexpr int kStep = kPerformerTensorCoreStep;
constexpr int kLd = kPerformerBf16Ld;
constexpr int kStepLd = kPerformerStepLd;
constexpr int kFloatLd = kPerformerFloatLd;

using Accumulator = wmma::fragment<wmma::accumulator, kF, kF, kF, float>;
using RowA = wmma::fragment<wmma::matrix_a, kF, kF, kF, __nv_bfloat16, wmma::row_major>;
using ColA = wmma::fragment<wmma::matrix_a, kF, kF, kF, __nv_bfloat16, wmma::col_major>;
using RowB = wmma::fragment<wmma::matrix_b, kF, kF, kF, __nv_bfloat16, wmma::row_major>;
using ColB = wmma::fragment<wmma::matrix_b, kF, kF, kF, __nv_bfloat16, wmma::col_major>;

// Warp w's two tiles (cuda_plan.hpp's performer_tensor_core_warp_tile).
__device__ __forceinline__ int warp_row_tile(int warp, int x) { return performer_tensor_core_warp_tile(warp, x).row; }
__device__ __forceinline__ int warp_column_tile(int warp) { return performer_tensor_core_warp_tile(warp, 0).column; }

__device__ __forceinline__ __nv_bfloat16 bf16_zero() { return __float2bfloat16_rn(0.0f); }

// A warp's 16 x 16 fp32 tile (rows i, columns j of a [m][dv] matrix at `matrix`) through its staging
// tile, lane l taking column l % 16 of rows l / 16, l / 16 + 2, ...: 16 lanes move 16 consecutive
// floats of a row. Elements past m or dv read as 0 and are never written.
__device__ __forceinline__ void load_state_tile(Accumulator& acc, float* stage, const float* matrix, int i, int j,
                                                int m, int dv, int lane) {
  const int column = lane % kF;
#pragma unroll 1
  for (int h = 0; h < kF / 2; ++h) {
    const int rr = lane / kF + 2 * h;
    stage[rr * kF + column] =
        i + rr < m && j + column < dv ? matrix[static_cast<std::int64_t>(i + rr) * dv + j + column] : 0.0f;
  }
  __syncwarp();
  wmma::load_matrix_sync(acc, stage, kF, wmma::mem_row_major);
  __syncwarp();  // the staging tile is free again
}
__device__ __forceinline__ void store_state_tile(const Accumulator& acc, float* stage, float* matrix, int i, int j,
                                                 int m, int dv, int lane) {
  wmma::store_matrix_sync(stage, acc, kF, wmma::mem_row_major);
  __syncwarp();
  const int column = lane % kF;
  if (j + column < dv) {
#pragma unroll 1
    for (int h = 0; h < kF / 2; ++h) {
      const int rr = lane / kF + 2 * h;
      if (i + rr < m) matrix[static_cast<std::int64_t>(i + rr) * dv + j + column] = stage[rr * kF + column];
    }
  }
  __syncwarp();  // the staging tile is free again
}

// Stages 3 and 4 in one pass: per (head, 64 features, 64 value columns) the block walks the chunks
// in order with its 64 x 64 tile of the running state in the warps' accumulators (fp32, warp w
// tiles w and w + 8). For each chunk it writes the state entering it, S_in(c) (relative to M_in(c),
// what stage 5 reads), into chunk_states, then brings the state to the chunk's last M,
// S *= e^(M_in - M_end), and adds the chunk's keys on tensor cores, S += K~^T V_c with
// K~ = e^(c_j - M_end) (phi(k_j) hi + lo) split into bf16 hi + lo (two products). The carried
// state comes in from, and the total goes back to, (state, normalizer). Value tile 0's blocks
// carry z the same way: z_in(c) to chunk_sums, then z = fmaf(z, e^(M_in - M_end), the fp32 sum of
// K~ hi + lo in token order), as stage 4's prefix did. U_c is never stored and the prefix never
// rereads it: S_in is written once.
__global__ void __launch_bounds__(kPerformerCudaThreads)
    performer_tensor_core_state_scan_kernel(PerformerTensorCoreStateLayout layout,
                                            const __nv_bfloat16* __restrict__ key_high,
                                            const __nv_bfloat16* __restrict__ key_low,
                                            const float* __restrict__ key_scale, const float* __restrict__ row_max,
                                            const float* __restrict__ carried_max, const __nv_bfloat16* __restrict__ v,
                                            float* __restrict__ state, float* __restrict__ normalizer,
                                            float* __restrict__ chunk_states, float* __restrict__ chunk_sums,
                                            std::int64_t tokens, int m, int dv, std::int64_t chunks, int key_tiles,
                                            int value_tiles) {
  extern __shared__ __align__(128) unsigned char shared[];
  auto* k_high = reinterpret_cast<__nv_bfloat16*>(shared + layout.k);
  auto* k_low = reinterpret_cast<__nv_bfloat16*>(shared + layout.k_low);
  auto* v_tile = reinterpret_cast<__nv_bfloat16*>(shared + layout.v);
  auto* weights = reinterpret_cast<float*>(shared + layout.weights);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  float* stage = reinterpret_cast<float*>(shared + layout.stage) + warp * kF * kF;

  ChunkTile tile = performer_state_scan_block(blockIdx.x, key_tiles, value_tiles);
  const int i0 = static_cast<int>(tile.key_tile) * kC, j0 = static_cast<int>(tile.value_tile) * kC;
  const int tj = warp_column_tile(warp);
  float* head_state = state + tile.bh * m * dv;
  Accumulator acc[2];
#pragma unroll
  for (int x = 0; x < 2; ++x) {
    load_state_tile(acc[x], stage, head_state, i0 + warp_row_tile(warp, x) * kF, j0 + tj * kF, m, dv, lane);
  }
  const int feature = i0 + static_cast<int>(threadIdx.x);
  const bool owns_z = tile.value_tile == 0 && threadIdx.x < kC && feature < m;
  float z = owns_z ? normalizer[tile.bh * m + feature] : 0.0f;
  float entering = carried_max[tile.bh];

  for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
    tile.chunk = chunk;
    const ChunkBlockRows at = chunk_block_rows(tile, tokens, chunks);
    const int rows = at.rows;
    __syncthreads();  // the previous chunk's products and sums are done with the shared tiles
    chunk_key_weights(weights, key_scale, row_max, tokens, at);
    __syncthreads();
    const __nv_bfloat16* k_high_rows = at.token_rows(key_high, m);
    const __nv_bfloat16* k_low_rows = at.token_rows(key_low, m);
    const __nv_bfloat16* v_rows = at.token_rows(v, dv);
    for (int e = threadIdx.x; e < kC * kC; e += blockDim.x) {
      const int r = e / kC, c = e % kC;
      const bool row = r < rows;
      // phi(k_j) as stage 1 stored it, hi + lo (their sum is exact in fp32, phi to ~2^-17); then
      // K~ = e^(c_j - M_end) phi(k_j) as hi + lo (exact in fp32: hi holds K~'s leading 8 bits).
      const std::int64_t at_key = static_cast<std::int64_t>(r) * m + i0 + c;
      const float key = row && i0 + c < m ? weights[r] * (__bfloat162float(k_high_rows[at_key]) +
                                                          __bfloat162float(k_low_rows[at_key]))
                                          : 0.0f;
      const __nv_bfloat16 high = __float2bfloat16_rn(key);
      k_high[r * kLd + c] = high;
      k_low[r * kLd + c] = __float2bfloat16_rn(key - __bfloat162float(high));
      v_tile[r * kLd + c] = row && j0 + c < dv ? v_rows[static_cast<std::int64_t>(r) * dv + j0 + c] : bf16_zero();
    }
    __syncthreads();

    // entering = -inf only before the first key, when the state is 0: 0 * e^-inf = 0.
    const float end = chunk_end_max(row_max, tile.bh, tokens, chunk);
    const float carry = expf(entering - end);
    entering = end;
    float* s_in = at.chunk_entry_of(chunk_states, m, dv);
    const int token_tiles = (rows + kF - 1) / kF;  // tiles wholly past the sequence add nothing
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int ti = warp_row_tile(warp, x);
      store_state_tile(acc[x], stage, s_in, i0 + ti * kF, j0 + tj * kF, m, dv, lane);
#pragma unroll
      for (int e = 0; e < acc[x].num_elements; ++e) acc[x].x[e] *= carry;  // uniform: any layout
      for (int kk = 0; kk < token_tiles; ++kk) {
        // K~^T as matrix_a: element (i, t) of K~^T is K~[t][i], at t * kLd + i: column-major.
        ColA high, low;
        RowB b;
        wmma::load_matrix_sync(high, k_high + kk * kF * kLd + ti * kF, kLd);
        wmma::load_matrix_sync(low, k_low + kk * kF * kLd + ti * kF, kLd);
        wmma::load_matrix_sync(b, v_tile + kk * kF * kLd + tj * kF, kLd);
        wmma::mma_sync(acc[x], high, b, acc[x]);
        wmma::mma_sync(acc[x], low, b, acc[x]);
      }
    }
    if (owns_z) {
      // z_c from the same K~ hi + lo as the state's products (their sum is exact in fp32), summed in
      // token order, folded in as stage 4's prefix folds it.
      at.chunk_entry_of(chunk_sums, m)[feature] = z;
      float sum = 0.0f;
      for (int r = 0; r < rows; ++r) {
        sum += __bfloat162float(k_high[r * kLd + threadIdx.x]) + __bfloat162float(k_low[r * kLd + threadIdx.x]);
      }
      z = fmaf(z, carry, sum);
    }
  }
#pragma unroll
  for (int x = 0; x < 2; ++x) {
    store_state_tile(acc[x], stage, head_state, i0 + warp_row_tile(warp, x) * kF, j0 + tj * kF, m, dv, lane);
  }
  if (owns_z) normalizer[tile.bh * m + feature] = z;
}

// Stage 5: the outputs of one chunk for one 64-column tile of dv (see the layout's comment for who
// computes what). The score tiles above the diagonal are never computed (P is block lower
// triangular); row tile ti of the outputs sums P V over key tiles kk <= ti only.
__global__ void __launch_bounds__(kPerformerCudaThreads, 3)
    performer_tensor_core_output_kernel(PerformerTensorCoreOutputLayout layout,
                                        const __nv_bfloat16* __restrict__ query_features,
                                        const __nv_bfloat16* __restrict__ key_features, const float* __restrict__ key_scale,
                                        const float* __restrict__ row_max, const float* __restrict__ carried_max,
                                        const __nv_bfloat16* __restrict__ v, const float* __restrict__ chunk_states,
                                        const float* __restrict__ chunk_sums, float* __restrict__ denominators_out,
                                        __nv_bfloat16* __restrict__ out, std::int64_t tokens, int m, int dv,
                                        std::int64_t chunks, int value_tiles) {
  extern __shared__ __align__(128) unsigned char shared[];
  auto* q_tile = reinterpret_cast<__nv_bfloat16*>(shared + layout.q);
  auto* k_tile = reinterpret_cast<__nv_bfloat16*>(shared + layout.k);
  auto* s_high = reinterpret_cast<__nv_bfloat16*>(shared + layout.s);
  auto* s_low = reinterpret_cast<__nv_bfloat16*>(shared + layout.s_low);
  auto* a_tile = reinterpret_cast<float*>(shared + layout.a);
  auto* p_tile = reinterpret_cast<__nv_bfloat16*>(shared + layout.p);
  auto* v_tile = reinterpret_cast<__nv_bfloat16*>(shared + layout.v);
  auto* z_tile = reinterpret_cast<float*>(shared + layout.z);
  auto* row_scale = reinterpret_cast<float*>(shared + layout.row_scale);
  auto* maxima = reinterpret_cast<float*>(shared + layout.row_max);
  auto* scales = reinterpret_cast<float*>(shared + layout.key_scale);
  auto* denominators = reinterpret_cast<float*>(shared + layout.denominator);
  const int warp = static_cast<int>(threadIdx.x / 32);

  const ChunkBlockRows at =
      performer_output_chunk(maxima, scales, row_scale, key_scale, row_max, carried_max, tokens, chunks, value_tiles);
  const int rows = at.rows, j0 = at.j0;
  const auto [q_rows, k_rows, v_rows, s_in, z_in] =
      chunk_output_operands(at, query_features, key_features, v, chunk_states, chunk_sums, m, dv);
  for (int e = threadIdx.x; e < kC * kC; e += blockDim.x) {
    const int r = e / kC, j = e % kC;
    v_tile[r * kLd + j] = r < rows && j0 + j < dv ? v_rows[static_cast<std::int64_t>(r) * dv + j0 + j] : bf16_zero();
  }
  __syncthreads();  // V and the rows' factors

  const int tj = warp_column_tile(warp);
  // Score tile (ti, tj) is needed on or below the diagonal only.
  const bool needed[2] = {tj <= warp_row_tile(warp, 0), tj <= warp_row_tile(warp, 1)};
  Accumulator acc_a[2], acc_o[2];
#pragma unroll
  for (int x = 0; x < 2; ++x) {
    wmma::fill_fragment(acc_a[x], 0.0f);
    wmma::fill_fragment(acc_o[x], 0.0f);
  }
  float denominator = 0.0f;  // threads < 64: row threadIdx.x's phi(q) . z_in (weighted after the loop)
  for (int i0 = 0; i0 < m; i0 += kStep) {
    for (int e = threadIdx.x; e < kC * kStep; e += blockDim.x) {
      // phi(q) and phi(k) hi are bf16 as stored: copied, not rounded.
      const int r = e / kStep, c = e % kStep;
      const bool inside = r < rows && i0 + c < m;
      const int at_feature = r * m + i0 + c;  // < 64 x 4096: an int, fewer registers than 64 bits
      q_tile[r * kStepLd + c] = inside ? q_rows[at_feature] : bf16_zero();
      k_tile[r * kStepLd + c] = inside ? k_rows[at_feature] : bf16_zero();
    }
    for (int e = threadIdx.x; e < kStep * kC; e += blockDim.x) {
      // The fp32 state as hi + lo: two products hold it to ~2^-17 (one would put 2^-9 on elements
      // whose signed sum, the output, is much smaller than they are).
      const int i = e / kC, j = e % kC;
      const float state = i0 + i < m && j0 + j < dv ? s_in[static_cast<std::int64_t>(i0 + i) * dv + j0 + j] : 0.0f;
      const __nv_bfloat16 high = __float2bfloat16_rn(state);
      s_high[i * kLd + j] = high;
      s_low[i * kLd + j] = __float2bfloat16_rn(state - __bfloat162float(high));
    }
    if (threadIdx.x < kStep) z_tile[threadIdx.x] = i0 + static_cast<int>(threadIdx.x) < m ? z_in[i0 + threadIdx.x] : 0.0f;
    __syncthreads();
    // Not unrolled: ptxas interleaving the two 16-wide steps spills at the 80 registers that
    // __launch_bounds__(., 3) allows (3 blocks, 24 warps per SM).
#pragma unroll 1
    for (int kk = 0; kk < kStep / kF; ++kk) {
      // phi(K)^T as matrix_b: element (i, t) is K[t][i], at t * kStepLd + i: column-major.
      ColB kt;
      RowB sh, sl;
      wmma::load_matrix_sync(kt, k_tile + tj * kF * kStepLd + kk * kF, kStepLd);
      wmma::load_matrix_sync(sh, s_high + kk * kF * kLd + tj * kF, kLd);
      wmma::load_matrix_sync(sl, s_low + kk * kF * kLd + tj * kF, kLd);
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        // One phi(Q) fragment for the scores and the inter-chunk term.
        RowA q;
        wmma::load_matrix_sync(q, q_tile + warp_row_tile(warp, x) * kF * kStepLd + kk * kF, kStepLd);
        if (needed[x]) wmma::mma_sync(acc_a[x], q, kt, acc_a[x]);
        wmma::mma_sync(acc_o[x], q, sh, acc_o[x]);
        wmma::mma_sync(acc_o[x], q, sl, acc_o[x]);
      }
    }
    if (threadIdx.x < kC) {
      const int r = static_cast<int>(threadIdx.x);
#pragma unroll 8
      for (int i = 0; i < kStep; ++i) denominator = fmaf(__bfloat162float(q_tile[r * kStepLd + i]), z_tile[i], denominator);
    }
    __syncthreads();  // the next step overwrites the tiles (and after the last, the scores do)
  }

#pragma unroll
  for (int x = 0; x < 2; ++x) {
    const int ti = warp_row_tile(warp, x);
    if (needed[x]) wmma::store_matrix_sync(a_tile + ti * kF * kFloatLd + tj * kF, acc_a[x], kFloatLd, wmma::mem_row_major);
  }
  __syncthreads();
  // The intra-chunk weights e^(c_j - M_r) <= 1, causal inclusive (row r sees keys j <= r); the
  // tiles above the diagonal were never written and are never read.
  for (int e = threadIdx.x; e < kC * kC; e += blockDim.x) {
    const int r = e / kC, j = e % kC;
    const float p = j <= r && r < rows ? a_tile[r * kFloatLd + j] * expf(scales[j] - maxima[r]) : 0.0f;
    p_tile[r * kLd + j] = __float2bfloat16_rn(p);
  }
  __syncthreads();  // P complete; the scores are consumed, so the outputs may take their region
  if (threadIdx.x < kC) {
    const int r = static_cast<int>(threadIdx.x);
    // The inter-chunk part brought from M_in to M_r in fp32, as the numerator's below; then the
    // intra-chunk part from the same rounded P as the numerator's.
    denominator *= row_scale[r];
    for (int j = 0; j < kC; ++j) denominator += __bfloat162float(p_tile[r * kLd + j]);
    denominators[r] = denominator;
    if (at.tile.value_tile == 0 && r < rows) denominators_out[at.token_row + r] = denominator;
  }
#pragma unroll
  for (int x = 0; x < 2; ++x) {
    const int ti = warp_row_tile(warp, x);
    // The inter-chunk term phi(q_r) S_in weighted by e^(M_in - M_r) in fp32, through the warp's own
    // tile of `a` (no other warp touches it: a __syncwarp, no block barrier), then + P V.
    float* tile = a_tile + ti * kF * kFloatLd + tj * kF;
    wmma::store_matrix_sync(tile, acc_o[x], kFloatLd, wmma::mem_row_major);
    __syncwarp();
#pragma unroll
    for (int h = 0; h < kF * kF / 32; ++h) {
      const int e = h * 32 + static_cast<int>(threadIdx.x % 32), rr = e / kF;
      tile[rr * kFloatLd + e % kF] *= row_scale[ti * kF + rr];
    }
    __syncwarp();
    wmma::load_matrix_sync(acc_o[x], tile, kFloatLd, wmma::mem_row_major);
    for (int kk = 0; kk <= ti; ++kk) {
      RowA p;
      RowB vb;
      wmma::load_matrix_sync(p, p_tile + ti * kF * kLd + kk * kF, kLd);
      wmma::load_matrix_sync(vb, v_tile + kk * kF * kLd + tj * kF, kLd);
      wmma::mma_sync(acc_o[x], p, vb, acc_o[x]);
    }
    wmma::store_matrix_sync(a_tile + ti * kF * kFloatLd + tj * kF, acc_o[x], kFloatLd, wmma::mem_row_major);
  }
  __syncthreads();  // the outputs and the denominators
  __nv_bfloat16* out_rows = at.token_rows(out, dv);
  for (int e = threadIdx.x; e < rows * kC; e += blockDim.x) {
    const int r = e / kC, j = e % kC;
    if (j0 + j < dv) {
      out_rows[static_cast<std::int64_t>(r) * dv + j0 + j] =
          __float2bfloat16_rn(a_tile[r * kFloatLd + j] * (1.0f / denominators[r]));
    }
  }
}

}  // namespace

void launch_performer_tensor_core_chunk_state_scan(const PerformerPrefillPlan& plan, const bf16* key_high,
                                                   const bf16* key_low, const float* key_scale, const float* row_max,
                                                   const float* carried_max, const bf16* v, float* state,
                                                   float* normalizer, float* chunk_states, float* chunk_sums,
                                                   CUstream_st* stream) {
  if (plan.state_scan_blocks == 0) return;
  performer_tensor_core_state_scan_kernel<<<static_cast<unsigned>(plan.state_scan_blocks), kPerformerCudaThreads,
                                            plan.tensor_core_state.bytes, stream>>>(
      plan.tensor_core_state, reinterpret_cast<const __nv_bfloat16*>(key_high),
      reinterpret_cast<const __nv_bfloat16*>(key_low), key_scale, row_max, carried_max,
      reinterpret_cast<const __nv_bfloat16*>(v), state, normalizer, chunk_states, chunk_sums, plan.tokens,
      plan.features, plan.dv, plan.chunks, static_cast<int>(plan.key_tiles), static_cast<int>(plan.value_tiles));
  check_launch("performer_tensor_core_state_scan_kernel");
}

void launch_performer_tensor_core_chunk_outputs(const PerformerPrefillPlan& plan, const bf16* query_features,
                                                const bf16* key_high, const float* key_scale,
                                                const float* row_max, const float* carried_max, const bf16* v,
                                                const float* chunk_states, const float* chunk_sums,
                                                float* denominators, bf16* out, CUstream_st* stream) {
  if (plan.output_blocks == 0) return;
  performer_tensor_core_output_kernel<<<static_cast<unsigned>(plan.output_blocks), kPerformerCudaThreads,
                                        plan.tensor_core_output.bytes, stream>>>(
      plan.tensor_core_output, reinterpret_cast<const __nv_bfloat16*>(query_features),
      reinterpret_cast<const __nv_bfloat16*>(key_high), key_scale, row_max, carried_max,
      reinterpret_cast<const __nv_bfloat16*>(v), chunk_states, chunk_sums, denominators,
      reinterpret_cast<__nv_bfloat16*>(out), plan.tokens, plan.features, plan.dv, plan.chunks,
      static_cast<int>(plan.value_tiles));
  check_launch("performer_tensor_core_output_kernel");
}

}  // namespace arch_bench
