// CUDA kernels of causal linear attention: a fused decode step and a three-stage chunkwise prefill
// (cuda_plan.hpp describes the geometry). Every product is fp32 FMA on SIMT cores: fp32 storage
// must meet 1e-4 (tf32 tensor cores would not), and the bf16 path widens to fp32 on load.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "mechanisms/common/chunk_block_rows.cuh"
#include "mechanisms/common/chunk_state_tile.cuh"
#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/common/prefix_pass.cuh"
#include "mechanisms/linear_attention/cuda.hpp"
#include "mechanisms/linear_attention/cuda_feature_map.cuh"
#include "core/backends/cuda/cuda_check.hpp"

namespace arch_bench {

namespace {

// ---------------------------------------------------------------------------------------------
// Decode: one block per (batch, head). Shared memory (floats, LinearDecodePlan::shared_bytes):
// phi(q) [dk], phi(k) [dk], phi(q) * z_new [dk], v [dv], partial numerators [row_groups][dv],
// denominator [1].
template <class T>
__global__ void __launch_bounds__(kLinearDecodeMaxThreads)
    linear_attention_decode_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                   float* __restrict__ state, float* __restrict__ normalizer, T* __restrict__ out,
                                   int dk, int dv, int row_groups, FeatureMap map) {
  extern __shared__ float shared[];
  float* phi_q = shared;
  float* phi_k = phi_q + dk;
  float* weighted_z = phi_k + dk;
  float* value = weighted_z + dk;
  float* partial = value + dv;
  float* denominator = partial + row_groups * dv;

  const std::int64_t bh = blockIdx.x;
  q += bh * dk;
  k += bh * dk;
  v += bh * dv;
  state += bh * dk * dv;
  normalizer += bh * dk;
  out += bh * dv;

  // z is updated by exactly one thread per element, in the one block that owns this head.
  for (int i = threadIdx.x; i < dk; i += blockDim.x) {
    const float a = phi(map, load_float(q[i]));
    const float b = phi(map, load_float(k[i]));
    const float z = normalizer[i] + b;
    normalizer[i] = z;
    phi_q[i] = a;
    phi_k[i] = b;
    weighted_z[i] = a * z;
  }
  for (int j = threadIdx.x; j < dv; j += blockDim.x) value[j] = load_float(v[j]);
  __syncthreads();

  if (threadIdx.x < 32) {  // blockDim.x is a multiple of 32 (plan), so warp 0 is whole
    float sum = 0.0f;
    for (int i = threadIdx.x; i < dk; i += 32) sum += weighted_z[i];
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (threadIdx.x == 0) *denominator = sum;
  }

  const int j = threadIdx.x % dv;        // linear_decode_column
  const int group = threadIdx.x / dv;    // linear_decode_group
  if (group < row_groups) {
    // S is read and written once: consecutive threads own consecutive columns of a row. Rows are
    // loaded a batch at a time so that the loads are in flight together, not one latency each.
    constexpr int kBatch = 8;
    const float vj = value[j];
    float numerator = 0.0f;
    float* column = state + j;
    for (int base = group; base < dk; base += kBatch * row_groups) {
      float s[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int i = base + b * row_groups;
        s[b] = i < dk ? column[i * dv] : 0.0f;
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int i = base + b * row_groups;
        if (i < dk) {
          const float updated = fmaf(phi_k[i], vj, s[b]);
          column[i * dv] = updated;
          numerator = fmaf(phi_q[i], updated, numerator);
        }
      }
    }
    partial[group * dv + j] = numerator;
  }
  __syncthreads();
  if (group == 0) {
    float numerator = 0.0f;
    for (int g = 0; g < row_groups; ++g) numerator += partial[g * dv + j];
    store_float(out + j, numerator / *denominator);
  }
}

// ---------------------------------------------------------------------------------------------
// Prefill stage 1: U_c = phi(K_c)^T V_c for one 64 x 64 tile of S, and (value tile 0 only) the
// chunk's key sums. Rows past the sequence load as 0 (phi must be 0 there, not phi(0) = 1).
template <class T>
__global__ void __launch_bounds__(kLinearCudaThreads)
    linear_attention_chunk_state_kernel(const T* __restrict__ k, const T* __restrict__ v,
                                        float* __restrict__ chunk_states, float* __restrict__ chunk_sums,
                                        std::int64_t tokens, int dk, int dv, std::int64_t chunks, int key_tiles,
                                        int value_tiles, FeatureMap map) {
  extern __shared__ float shared[];
  const ChunkTile tile = chunk_state_block(blockIdx.x, chunks, key_tiles, value_tiles);
  const ChunkBlockRows at = chunk_block_rows(tile, tokens, chunks);
  const T* k_rows = at.token_rows(k, dk);
  const T* v_rows = at.token_rows(v, dv);
  chunk_state_tile(
      shared, tile, at.rows, dk, dv, chunks,
      [=](int m, int i) { return phi(map, load_float(k_rows[m * dk + i])); },
      [=](int m, int j) { return load_float(v_rows[m * dv + j]); }, chunk_states, chunk_sums);
}

// Prefill stage 2: the exclusive prefix over chunks of every element of (S, z) (prefix_pass.cuh).
__global__ void __launch_bounds__(kLinearCudaThreads)
    linear_attention_chunk_prefix_kernel(float* __restrict__ chunk_states, float* __restrict__ chunk_sums,
                                         float* __restrict__ state, float* __restrict__ normalizer, int dk, int dv,
                                         std::int64_t chunks, std::int64_t blocks_per_head) {
  const ChunkPrefixElement at = chunk_prefix_element(blockIdx.x, threadIdx.x, blocks_per_head, blockDim.x);
  exclusive_chunk_prefix(chunk_states, chunk_sums, state, normalizer, dk, dv, chunks, at.bh, at.element,
                         [](float running, float u, std::int64_t) { return running + u; });
}

// Prefill stage 3: the outputs of one chunk for one 64-column tile of dv. Thread (ty, tx) holds
// rows ty + 16a and columns tx + 16b of both A = phi(Q_c) phi(K_c)^T and the output.
template <class T>
__global__ void __launch_bounds__(kLinearCudaThreads)
    linear_attention_chunk_output_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                         const float* __restrict__ chunk_states,
                                         const float* __restrict__ chunk_sums, T* __restrict__ out,
                                         std::int64_t tokens, int dk, int dv, std::int64_t chunks, int value_tiles,
                                         FeatureMap map) {
  using Layout = ChunkOutputSharedLayout;
  constexpr int kA = kChunkTile + kChunkTilePad;  // row stride of A
  extern __shared__ float shared[];
  float* a_tile = shared + Layout::a;  // [r][m]
  float* v_tile = shared + Layout::v;  // [m][j]
  float* denominators = shared + Layout::denominator;

  const ChunkTile tile = chunk_output_block(blockIdx.x, chunks, value_tiles);
  const ChunkBlockRows at = chunk_block_rows(tile, tokens, chunks);
  const int rows = at.rows, j0 = at.j0;
  const auto [q_rows, k_rows, v_rows, s_in, z_in] =
      chunk_output_operands(at, q, k, v, chunk_states, chunk_sums, dk, dv);

  const int t = threadIdx.x;
  float acc_o[4][4] = {};
  float acc_a[4][4] = {};
  float denominator = 0.0f;  // threads < 64: phi(q_r) . z_in for r = threadIdx.x
  chunk_output_key_loop(
      shared, rows, dk, dv, j0, s_in, z_in, [=](int m, int i) { return phi(map, load_float(q_rows[m * dk + i])); },
      [=](int m, int i) { return phi(map, load_float(k_rows[m * dk + i])); }, acc_a, acc_o, denominator);

  // Causal mask inside the chunk, inclusive: row r sees keys m <= r (rows past the sequence are 0).
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int row = chunk_tile_row(t, r), m = chunk_tile_column(t, c);
      a_tile[row * kA + m] = m <= row ? acc_a[r][c] : 0.0f;
    }
  }
  load_value_tile(v_tile, rows, j0, dv, [=](int m, int j) { return load_float(v_rows[m * dv + j]); });
  __syncthreads();
  if (threadIdx.x < kChunkTile) {
    for (int m = 0; m < kChunkTile; ++m) denominator += a_tile[threadIdx.x * kA + m];
    denominators[threadIdx.x] = denominator;
  }
  accumulate_masked_a_v(shared, rows, acc_o);
  store_chunk_output(shared, acc_o, rows, j0, dv, at.token_rows(out, dv));
}

}  // namespace

template <class T>
void launch_linear_attention_decode(const LinearDecodePlan& plan, FeatureMap map, const T* q, const T* k,
                                    const T* v, float* state, float* normalizer, T* out, CUstream_st* stream) {
  using D = typename DeviceStorage<T>::type;
  if (plan.blocks == 0) return;
  linear_attention_decode_kernel<D><<<static_cast<unsigned>(plan.blocks), plan.threads, plan.shared_bytes, stream>>>(
      reinterpret_cast<const D*>(q), reinterpret_cast<const D*>(k), reinterpret_cast<const D*>(v), state, normalizer,
      reinterpret_cast<D*>(out), plan.dk, plan.dv, plan.row_groups, map);
  check_launch("linear_attention_decode_kernel");
}

template <class T>
void launch_linear_attention_prefill(const LinearPrefillPlan& plan, FeatureMap map, const T* q, const T* k,
                                     const T* v, float* state, float* normalizer, T* out, float* chunk_states,
                                     float* chunk_sums, CUstream_st* stream) {
  using D = typename DeviceStorage<T>::type;
  if (plan.tokens == 0 || plan.batch_heads == 0) return;  // nothing to fold in; (S, z) unchanged
  const D* q_d = reinterpret_cast<const D*>(q);
  const D* k_d = reinterpret_cast<const D*>(k);
  const D* v_d = reinterpret_cast<const D*>(v);
  linear_attention_chunk_state_kernel<D>
      <<<static_cast<unsigned>(plan.state_blocks), plan.threads, plan.state_shared_bytes, stream>>>(
          k_d, v_d, chunk_states, chunk_sums, plan.tokens, plan.dk, plan.dv, plan.chunks,
          static_cast<int>(plan.key_tiles), static_cast<int>(plan.value_tiles), map);
  check_launch("linear_attention_chunk_state_kernel");
  linear_attention_chunk_prefix_kernel<<<static_cast<unsigned>(plan.prefix_blocks), plan.threads, 0, stream>>>(
      chunk_states, chunk_sums, state, normalizer, plan.dk, plan.dv, plan.chunks,
      plan.prefix_blocks / plan.batch_heads);
  check_launch("linear_attention_chunk_prefix_kernel");
  linear_attention_chunk_output_kernel<D>
      <<<static_cast<unsigned>(plan.output_blocks), plan.threads, plan.output_shared_bytes, stream>>>(
          q_d, k_d, v_d, chunk_states, chunk_sums, reinterpret_cast<D*>(out), plan.tokens, plan.dk, plan.dv,
          plan.chunks, static_cast<int>(plan.value_tiles), map);
  check_launch("linear_attention_chunk_output_kernel");
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                              \
  template void launch_linear_attention_decode<T>(const LinearDecodePlan&, FeatureMap, const T*, const T*,       \
                                                  const T*, float*, float*, T*, CUstream_st*);                   \
  template void launch_linear_attention_prefill<T>(const LinearPrefillPlan&, FeatureMap, const T*, const T*,     \
                                                   const T*, float*, float*, T*, float*, float*, CUstream_st*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
