// CUDA kernels of causal linear attention: a fused decode step and a three-stage chunkwise prefill
// (cuda_plan.hpp describes the geometry). Every product is fp32 FMA on SIMT cores: fp32 storage
// must meet 1e-4 (tf32 tensor cores would not), and the bf16 path widens to fp32 on load.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/linear_attention/cuda.hpp"
#include "core/backends/cuda/cuda_check.hpp"

namespace arch_bench {

namespace {

// The same feature maps as feature_maps.hpp; expf (not __expf) keeps fp32 within 1e-4.
__device__ __forceinline__ float phi(FeatureMap map, float x) {
  if (map == FeatureMap::relu_plus_one) return fmaxf(x, 0.0f) + 1.0f;
  return x > 0.0f ? x + 1.0f : expf(x);
}

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
  float* k_tile = shared + LinearChunkStateSharedLayout::k;  // [m][i]
  float* v_tile = shared + LinearChunkStateSharedLayout::v;  // [m][j]

  const LinearChunkTile tile = linear_state_block(blockIdx.x, chunks, key_tiles, value_tiles);
  const std::int64_t bh = tile.bh, chunk = tile.chunk;
  const std::int64_t first = chunk * kLinearTile;
  const int rows = linear_chunk_rows(tokens, chunk);
  const int i0 = static_cast<int>(tile.key_tile) * kLinearTile, j0 = static_cast<int>(tile.value_tile) * kLinearTile;
  const T* k_rows = k + (bh * tokens + first) * dk;
  const T* v_rows = v + (bh * tokens + first) * dv;

  for (int e = threadIdx.x; e < kLinearTile * kLinearTile; e += blockDim.x) {
    const int m = e / kLinearTile, c = e % kLinearTile;
    const bool row = m < rows;
    k_tile[e] = row && i0 + c < dk ? phi(map, load_float(k_rows[m * dk + i0 + c])) : 0.0f;
    v_tile[e] = row && j0 + c < dv ? load_float(v_rows[m * dv + j0 + c]) : 0.0f;
  }
  __syncthreads();

  const int t = threadIdx.x;
  float acc[4][4] = {};
  for (int m = 0; m < rows; ++m) {
    float a[4], b[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) a[r] = k_tile[m * kLinearTile + linear_tile_row(t, r)];
#pragma unroll
    for (int c = 0; c < 4; ++c) b[c] = v_tile[m * kLinearTile + linear_tile_column(t, c)];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
    }
  }
  float* tile_out = chunk_states + (bh * chunks + chunk) * dk * dv;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = i0 + linear_tile_row(t, r);
    if (i >= dk) continue;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int j = j0 + linear_tile_column(t, c);
      if (j < dv) tile_out[static_cast<std::int64_t>(i) * dv + j] = acc[r][c];
    }
  }
  if (tile.value_tile == 0 && threadIdx.x < kLinearTile && i0 + static_cast<int>(threadIdx.x) < dk) {
    float sum = 0.0f;
    for (int m = 0; m < rows; ++m) sum += k_tile[m * kLinearTile + threadIdx.x];
    chunk_sums[(bh * chunks + chunk) * dk + i0 + threadIdx.x] = sum;
  }
}

// Prefill stage 2: exclusive prefix over chunks, in place, one thread per element of (S, z) of a
// head; the carried-in state is the prefix's start and the total is the new state. Loads are
// issued a batch at a time so that the sequential chain is not one memory latency per chunk.
__global__ void __launch_bounds__(kLinearCudaThreads)
    linear_attention_chunk_prefix_kernel(float* __restrict__ chunk_states, float* __restrict__ chunk_sums,
                                         float* __restrict__ state, float* __restrict__ normalizer, int dk, int dv,
                                         std::int64_t chunks, std::int64_t blocks_per_head) {
  const LinearPrefixElement at = linear_prefix_element(blockIdx.x, threadIdx.x, blocks_per_head, blockDim.x);
  const std::int64_t bh = at.bh, e = at.element;
  const std::int64_t state_elements = static_cast<std::int64_t>(dk) * dv;
  if (e >= state_elements + dk) return;
  float* carried;
  float* column;
  std::int64_t stride;
  if (e < state_elements) {
    carried = state + bh * state_elements + e;
    column = chunk_states + bh * chunks * state_elements + e;
    stride = state_elements;
  } else {
    carried = normalizer + bh * dk + (e - state_elements);
    column = chunk_sums + bh * chunks * dk + (e - state_elements);
    stride = dk;
  }
  constexpr int kBatch = 8;
  float running = *carried;
  for (std::int64_t c0 = 0; c0 < chunks; c0 += kBatch) {
    float local[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) local[b] = c0 + b < chunks ? column[(c0 + b) * stride] : 0.0f;
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (c0 + b < chunks) {
        column[(c0 + b) * stride] = running;
        running += local[b];
      }
    }
  }
  *carried = running;
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
  using Layout = LinearOutputSharedLayout;
  constexpr int kQ = kLinearKeyStep + kLinearPad;  // row stride of the phi(Q), phi(K) tiles
  constexpr int kA = kLinearTile + kLinearPad;     // row stride of A
  extern __shared__ float shared[];
  float* q_tile = shared + Layout::q;  // [r][i]
  float* k_tile = shared + Layout::k;  // [m][i]
  float* s_tile = shared + Layout::s;  // [i][j]
  float* z_tile = shared + Layout::z;  // [i]
  float* a_tile = shared + Layout::a;  // [r][m]
  float* v_tile = shared + Layout::v;  // [m][j]
  float* denominators = shared + Layout::denominator;

  const LinearChunkTile tile = linear_output_block(blockIdx.x, chunks, value_tiles);
  const std::int64_t bh = tile.bh, chunk = tile.chunk;
  const std::int64_t first = chunk * kLinearTile;
  const int rows = linear_chunk_rows(tokens, chunk);
  const int j0 = static_cast<int>(tile.value_tile) * kLinearTile;
  const T* q_rows = q + (bh * tokens + first) * dk;
  const T* k_rows = k + (bh * tokens + first) * dk;
  const T* v_rows = v + (bh * tokens + first) * dv;
  const float* s_in = chunk_states + (bh * chunks + chunk) * dk * dv;
  const float* z_in = chunk_sums + (bh * chunks + chunk) * dk;

  const int t = threadIdx.x;
  float acc_a[4][4] = {};
  float acc_o[4][4] = {};
  float denominator = 0.0f;  // threads < 64: phi(q_r) . z_in for r = threadIdx.x

  for (int i0 = 0; i0 < dk; i0 += kLinearKeyStep) {
    for (int e = threadIdx.x; e < kLinearTile * kLinearKeyStep; e += blockDim.x) {
      const int m = e / kLinearKeyStep, c = e % kLinearKeyStep;
      const bool inside = m < rows && i0 + c < dk;
      q_tile[m * kQ + c] = inside ? phi(map, load_float(q_rows[m * dk + i0 + c])) : 0.0f;
      k_tile[m * kQ + c] = inside ? phi(map, load_float(k_rows[m * dk + i0 + c])) : 0.0f;
    }
    for (int e = threadIdx.x; e < kLinearKeyStep * kLinearTile; e += blockDim.x) {
      const int i = e / kLinearTile, j = e % kLinearTile;
      s_tile[e] = i0 + i < dk && j0 + j < dv ? s_in[static_cast<std::int64_t>(i0 + i) * dv + j0 + j] : 0.0f;
    }
    if (threadIdx.x < kLinearKeyStep) {
      z_tile[threadIdx.x] = i0 + static_cast<int>(threadIdx.x) < dk ? z_in[i0 + threadIdx.x] : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int i = 0; i < kLinearKeyStep; ++i) {
      float a[4], b[4], s[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) a[r] = q_tile[linear_tile_row(t, r) * kQ + i];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        b[c] = k_tile[linear_tile_column(t, c) * kQ + i];
        s[c] = s_tile[i * kLinearTile + linear_tile_column(t, c)];
      }
#pragma unroll
      for (int r = 0; r < 4; ++r) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          acc_a[r][c] = fmaf(a[r], b[c], acc_a[r][c]);
          acc_o[r][c] = fmaf(a[r], s[c], acc_o[r][c]);
        }
      }
    }
    if (threadIdx.x < kLinearTile) {
      for (int i = 0; i < kLinearKeyStep; ++i) {
        denominator = fmaf(q_tile[threadIdx.x * kQ + i], z_tile[i], denominator);
      }
    }
    __syncthreads();  // the next step (or A and V below) overwrite the tiles
  }

  // Causal mask inside the chunk, inclusive: row r sees keys m <= r (rows past the sequence are 0).
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int row = linear_tile_row(t, r), m = linear_tile_column(t, c);
      a_tile[row * kA + m] = m <= row ? acc_a[r][c] : 0.0f;
    }
  }
  for (int e = threadIdx.x; e < kLinearTile * kLinearTile; e += blockDim.x) {
    const int m = e / kLinearTile, j = e % kLinearTile;
    v_tile[e] = m < rows && j0 + j < dv ? load_float(v_rows[m * dv + j0 + j]) : 0.0f;
  }
  __syncthreads();
  if (threadIdx.x < kLinearTile) {
    for (int m = 0; m < kLinearTile; ++m) denominator += a_tile[threadIdx.x * kA + m];
    denominators[threadIdx.x] = denominator;
  }
  for (int m = 0; m < rows; ++m) {
    float a[4], b[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) a[r] = a_tile[linear_tile_row(t, r) * kA + m];
#pragma unroll
    for (int c = 0; c < 4; ++c) b[c] = v_tile[m * kLinearTile + linear_tile_column(t, c)];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
      for (int c = 0; c < 4; ++c) acc_o[r][c] = fmaf(a[r], b[c], acc_o[r][c]);
    }
  }
  __syncthreads();  // denominators
  T* out_rows = out + (bh * tokens + first) * dv;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = linear_tile_row(t, r);
    if (row >= rows) continue;
    const float inverse = 1.0f / denominators[row];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int j = j0 + linear_tile_column(t, c);
      if (j < dv) store_float(out_rows + static_cast<std::int64_t>(row) * dv + j, acc_o[r][c] * inverse);
    }
  }
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
