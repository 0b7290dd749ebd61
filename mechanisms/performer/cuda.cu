// CUDA kernels of causal Performer attention: a fused decode step and a five-stage chunkwise prefill
// (cuda_plan.hpp describes the geometry). Every product here is fp32 FMA on SIMT cores, as in
// linear_attention's kernels: fp32 storage must meet 1e-4 against the fp64 reference, which tf32
// tensor cores would not. The bf16 prefill runs stages 1, 3 + 4 (one pass) and 5 on tensor cores
// instead (cuda_tensor_core.cu, cuda_tensor_core_chunks.cu; the plan chooses) and stage 2 here.
// expf (not __expf) keeps fp32 within the tolerance; the stabiliser is the CPU
// kernel's (cpu.cpp): favor+ features relative to the token's largest projection, the keys' log-scale
// carried by the causal running max M.
#include <cub/block/block_scan.cuh>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "mechanisms/common/chunk_state_tile.cuh"
#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/common/prefix_pass.cuh"
#include "mechanisms/performer/cuda_chunk_max.cuh"
#include "mechanisms/performer/cuda.hpp"
#include "mechanisms/performer/cuda_trig.hpp"
#include "core/backends/cuda/cuda_check.hpp"

namespace arch_bench {

namespace {

constexpr float kEps = static_cast<float>(kPerformerEpsilon);
constexpr int kWarps = kPerformerCudaThreads / 32;

struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Block-wide sum and max over kPerformerCudaThreads threads; `scratch` holds kWarps floats. Every
// thread gets the result; the trailing barrier lets the caller reuse `scratch` at once.
__device__ float block_sum(float x, float* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = x;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) total += scratch[w];
  __syncthreads();
  return total;
}
__device__ float block_max(float x, float* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = x;
  __syncthreads();
  float top = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) top = fmaxf(top, scratch[w]);
  __syncthreads();
  return top;
}

__global__ void __launch_bounds__(kPerformerCudaThreads)
    performer_reset_kernel(float* __restrict__ state, float* __restrict__ normalizer, float* __restrict__ running_max,
                           std::int64_t state_elements, std::int64_t normalizer_elements, std::int64_t heads) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < state_elements;
       i += stride) {
    state[i] = 0.0f;
    if (i < normalizer_elements) normalizer[i] = 0.0f;
    if (i < heads) running_max[i] = -INFINITY;
  }
}

// ---------------------------------------------------------------------------------------------
// Decode: one block per (batch, head). Shared memory (floats, PerformerDecodePlan::shared_bytes):
// x_q, x_k [dk], phi_q, phi_k [m], v [dv], partial numerators [row_groups][dv], scratch.
template <class T>
__global__ void __launch_bounds__(kPerformerCudaThreads)
    performer_decode_kernel(const float* __restrict__ projection, const T* __restrict__ q, const T* __restrict__ k,
                            const T* __restrict__ v, float* __restrict__ state, float* __restrict__ normalizer,
                            float* __restrict__ running_max, T* __restrict__ out, float* __restrict__ denominators,
                            int dk, int dv, int m, int n, int row_groups, PerformerFeatures kind) {
  extern __shared__ float shared[];
  float* x_q = shared;
  float* x_k = x_q + dk;
  float* phi_q = x_k + dk;
  float* phi_k = phi_q + m;
  float* value = phi_k + m;
  float* partial = value + dv;
  float* scratch = partial + row_groups * dv;

  const std::int64_t bh = blockIdx.x;
  q += bh * dk;
  k += bh * dk;
  v += bh * dv;
  state += bh * m * dv;
  normalizer += bh * m;
  out += bh * dv;
  const float old_max = running_max[bh];  // written by thread 0 only after the last barrier

  float norm = 0.0f;
  for (int d = threadIdx.x; d < dk; d += blockDim.x) {
    x_q[d] = load_float(q[d]);
    const float x = load_float(k[d]);
    x_k[d] = x;
    norm = fmaf(x, x, norm);
  }
  for (int j = threadIdx.x; j < dv; j += blockDim.x) value[j] = load_float(v[j]);
  __syncthreads();

  // q and k projected together: one pass over W (coalesced: consecutive threads, consecutive rows).
  const bool trig = kind == PerformerFeatures::trig;
  const float trig_ratio = sqrtf(2.0f / static_cast<float>(m));
  float top_q = -INFINITY, top_k = -INFINITY;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float pq = 0.0f, pk = 0.0f;
    for (int d = 0; d < dk; ++d) {
      const float w = projection[static_cast<std::int64_t>(d) * n + i];
      pq = fmaf(x_q[d], w, pq);
      pk = fmaf(x_k[d], w, pk);
    }
    if (trig) {
      float s, c;
      performer_trig_pair(pq, &s, &c);
      phi_q[i] = trig_ratio * s;
      phi_q[i + n] = trig_ratio * c;
      performer_trig_pair(pk, &s, &c);
      phi_k[i] = trig_ratio * s;
      phi_k[i + n] = trig_ratio * c;
    } else {
      phi_q[i] = pq;
      phi_k[i] = pk;
      top_q = fmaxf(top_q, pq);
      top_k = fmaxf(top_k, pk);
    }
  }
  const float half_norm = block_sum(norm, scratch) * (0.5f / sqrtf(static_cast<float>(dk)));
  float key_scale = half_norm;
  if (!trig) {
    top_q = block_max(top_q, scratch);
    top_k = block_max(top_k, scratch);
    key_scale = top_k - half_norm;
    const float ratio = 1.0f / sqrtf(static_cast<float>(m));
    for (int i = threadIdx.x; i < m; i += blockDim.x) {  // each thread rewrites what it wrote
      phi_q[i] = ratio * (expf(phi_q[i] - top_q) + kEps);
      phi_k[i] = ratio * (expf(phi_k[i] - top_k) + kEps);
    }
  }
  // Running max: a key above M rescales the state by exp(M_old - M_new) <= 1 (0 for the first
  // key, M = -inf); the key itself enters with weight exp(c_k - M_new) <= 1.
  const float new_max = fmaxf(old_max, key_scale);
  const float rescale = expf(old_max - new_max);
  const float weight = expf(key_scale - new_max);
  __syncthreads();  // features complete

  float denominator = 0.0f;
  for (int i = threadIdx.x; i < m; i += blockDim.x) {
    const float z = fmaf(normalizer[i], rescale, weight * phi_k[i]);
    normalizer[i] = z;
    denominator = fmaf(phi_q[i], z, denominator);
  }
  const int j = threadIdx.x % dv;      // performer_decode_column
  const int group = threadIdx.x / dv;  // performer_decode_group
  if (group < row_groups) {
    // S read and written once; a batch of rows in flight together, not one latency each.
    constexpr int kBatch = 8;
    const float vj = value[j];
    float numerator = 0.0f;
    float* column = state + j;
    for (int base = group; base < m; base += kBatch * row_groups) {
      float s[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int i = base + b * row_groups;
        s[b] = i < m ? column[static_cast<std::int64_t>(i) * dv] : 0.0f;
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int i = base + b * row_groups;
        if (i < m) {
          const float updated = fmaf(weight * phi_k[i], vj, s[b] * rescale);
          column[static_cast<std::int64_t>(i) * dv] = updated;
          numerator = fmaf(phi_q[i], updated, numerator);
        }
      }
    }
    partial[group * dv + j] = numerator;
  }
  denominator = block_sum(denominator, scratch);  // its barriers also publish `partial`
  if (group == 0) {
    float numerator = 0.0f;
    for (int g = 0; g < row_groups; ++g) numerator += partial[g * dv + j];
    store_float(out + j, numerator / denominator);
  }
  if (threadIdx.x == 0) {
    running_max[bh] = new_max;
    denominators[bh] = denominator;
  }
}

// ---------------------------------------------------------------------------------------------
// Prefill stage 1: the features of kPerformerFeatureTokens tokens of one head, queries or keys.
// Each thread owns projection rows i, i + 256, ... and keeps one accumulator per token of the tile.
template <class T>
__global__ void __launch_bounds__(kPerformerCudaThreads)
    performer_features_kernel(const float* __restrict__ projection, const T* __restrict__ q,
                              const T* __restrict__ k, float* __restrict__ query_features,
                              float* __restrict__ key_features, float* __restrict__ key_scale, std::int64_t tokens,
                              int dk, int m, int n, std::int64_t token_tiles, PerformerFeatures kind) {
  constexpr int kTokens = kPerformerFeatureTokens;
  extern __shared__ float shared[];
  float* x = shared;                                  // [16][dk]
  float* partial = x + kTokens * dk;                  // [16][warps]
  float* top = partial + kTokens * kWarps;            // [16]
  float* half_norm = top + kTokens;                   // [16]

  const PerformerFeatureTile tile = performer_feature_block(blockIdx.x, token_tiles);
  const std::int64_t first = tile.first_token;
  const int rows = tokens - first < kTokens ? static_cast<int>(tokens - first) : kTokens;
  const T* source = (tile.keys ? k : q) + (tile.bh * tokens + first) * dk;
  float* features = (tile.keys ? key_features : query_features) + (tile.bh * tokens + first) * m;

  for (int e = threadIdx.x; e < kTokens * dk; e += blockDim.x) {
    x[e] = e / dk < rows ? load_float(source[e]) : 0.0f;
  }
  __syncthreads();

  const bool trig = kind == PerformerFeatures::trig;
  const float trig_ratio = sqrtf(2.0f / static_cast<float>(m));
  float local_top[kTokens];
#pragma unroll
  for (int r = 0; r < kTokens; ++r) local_top[r] = -INFINITY;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float acc[kTokens] = {};
    for (int d = 0; d < dk; ++d) {
      const float w = projection[static_cast<std::int64_t>(d) * n + i];
#pragma unroll
      for (int r = 0; r < kTokens; ++r) acc[r] = fmaf(x[r * dk + d], w, acc[r]);
    }
#pragma unroll
    for (int r = 0; r < kTokens; ++r) {
      if (r >= rows) break;
      float* row = features + static_cast<std::int64_t>(r) * m;
      if (trig) {
        float s, c;
        performer_trig_pair(acc[r], &s, &c);
        row[i] = trig_ratio * s;
        row[i + n] = trig_ratio * c;
      } else {
        row[i] = acc[r];
        local_top[r] = fmaxf(local_top[r], acc[r]);
      }
    }
  }
  // Per-token reductions: the largest projection (favor+) and |x~|^2 / 2 (keys).
  if (!trig) {
#pragma unroll
    for (int r = 0; r < kTokens; ++r) {
      float t = local_top[r];
      for (int offset = 16; offset > 0; offset >>= 1) t = fmaxf(t, __shfl_xor_sync(0xffffffffu, t, offset));
      if (threadIdx.x % 32 == 0) partial[r * kWarps + threadIdx.x / 32] = t;
    }
  }
  __syncthreads();
  if (threadIdx.x < kTokens) {
    const int r = threadIdx.x;
    float t = -INFINITY;
    if (!trig) {
      for (int w = 0; w < kWarps; ++w) t = fmaxf(t, partial[r * kWarps + w]);
    }
    top[r] = t;
    float norm = 0.0f;
    for (int d = 0; d < dk; ++d) norm = fmaf(x[r * dk + d], x[r * dk + d], norm);
    half_norm[r] = norm * (0.5f / sqrtf(static_cast<float>(dk)));
  }
  __syncthreads();
  if (!trig) {
    const float ratio = 1.0f / sqrtf(static_cast<float>(m));
    for (int i = threadIdx.x; i < n; i += blockDim.x) {  // each thread rewrites what it wrote
      for (int r = 0; r < rows; ++r) {
        float* f = features + static_cast<std::int64_t>(r) * m + i;
        *f = ratio * (expf(*f - top[r]) + kEps);
      }
    }
  }
  if (tile.keys && static_cast<int>(threadIdx.x) < rows) {
    const int r = threadIdx.x;
    key_scale[tile.bh * tokens + first + r] = trig ? half_norm[r] : top[r] - half_norm[r];
  }
}

// Prefill stage 2: M_t = max(M_carried, c_0..c_t) per head, 256 tokens per step of a block scan;
// the carried M is kept for stages 4 and 5, and the final one becomes the state's M.
__global__ void __launch_bounds__(kPerformerCudaThreads)
    performer_row_max_kernel(const float* __restrict__ key_scale, float* __restrict__ row_max,
                             float* __restrict__ running_max, float* __restrict__ carried_max, std::int64_t tokens) {
  using Scan = cub::BlockScan<float, kPerformerCudaThreads>;
  __shared__ typename Scan::TempStorage temp;
  __shared__ float step_max;
  const std::int64_t bh = blockIdx.x;
  float carry = running_max[bh];
  if (threadIdx.x == 0) carried_max[bh] = carry;
  for (std::int64_t t0 = 0; t0 < tokens; t0 += kPerformerCudaThreads) {
    const std::int64_t t = t0 + threadIdx.x;
    const float c = t < tokens ? key_scale[bh * tokens + t] : -INFINITY;
    float inclusive;
    Scan(temp).InclusiveScan(c, inclusive, MaxOp{});
    inclusive = fmaxf(inclusive, carry);
    if (t < tokens) row_max[bh * tokens + t] = inclusive;
    if (threadIdx.x == kPerformerCudaThreads - 1) step_max = inclusive;
    __syncthreads();  // step_max written; temp free for the next scan
    carry = step_max;
    __syncthreads();
  }
  if (threadIdx.x == 0) running_max[bh] = carry;
}

// Prefill stage 3: U_c = sum_j exp(c_j - M_end) f(k_j) v_j^T for one 64 x 64 tile of S, and (value
// tile 0) the weighted key sums. Rows past the sequence load as 0.
template <class T>
__global__ void __launch_bounds__(kPerformerCudaThreads)
    performer_chunk_state_kernel(const float* __restrict__ key_features, const float* __restrict__ key_scale,
                                 const float* __restrict__ row_max, const T* __restrict__ v,
                                 float* __restrict__ chunk_states, float* __restrict__ chunk_sums,
                                 std::int64_t tokens, int m, int dv, std::int64_t chunks, int key_tiles,
                                 int value_tiles) {
  extern __shared__ float shared[];
  __shared__ float weights[kChunkTile];

  const ChunkTile tile = chunk_state_block(blockIdx.x, chunks, key_tiles, value_tiles);
  const ChunkBlockRows at = chunk_block_rows(tile, tokens, chunks);
  chunk_key_weights(weights, key_scale, row_max, tokens, at);
  __syncthreads();
  const float* k_rows = at.token_rows(key_features, m);
  const T* v_rows = at.token_rows(v, dv);
  chunk_state_tile(
      shared, tile, at.rows, m, dv, chunks,
      [=](int r, int i) { return weights[r] * k_rows[static_cast<std::int64_t>(r) * m + i]; },
      [=](int r, int j) { return load_float(v_rows[static_cast<std::int64_t>(r) * dv + j]); }, chunk_states,
      chunk_sums);
}

// Prefill stage 4: the exclusive scan over chunks in place (prefix_pass.cuh), each chunk's entry
// relative to the M it enters with: S_in(c + 1) = S_in(c) exp(M_in(c) - M_end(c)) + U_c, from the
// carried state.
__global__ void __launch_bounds__(kPerformerCudaThreads)
    performer_chunk_prefix_kernel(float* __restrict__ chunk_states, float* __restrict__ chunk_sums,
                                  float* __restrict__ state, float* __restrict__ normalizer,
                                  const float* __restrict__ row_max, const float* __restrict__ carried_max,
                                  std::int64_t tokens, int m, int dv, std::int64_t chunks,
                                  std::int64_t blocks_per_head) {
  const ChunkPrefixElement at = chunk_prefix_element(blockIdx.x, threadIdx.x, blocks_per_head, blockDim.x);
  const std::int64_t bh = at.bh;
  float entering = carried_max[bh];
  exclusive_chunk_prefix(chunk_states, chunk_sums, state, normalizer, m, dv, chunks, bh, at.element,
                         [&](float running, float u, std::int64_t chunk) {
                           const float end = chunk_end_max(row_max, bh, tokens, chunk);
                           // entering = -inf only before the first key, when running is 0: 0 * exp(-inf) = 0.
                           const float next = fmaf(running, expf(entering - end), u);
                           entering = end;
                           return next;
                         });
}

// Prefill stage 5: the outputs of one chunk for one 64-column tile of dv; thread (ty, tx) holds rows
// ty + 16a and columns tx + 16b of both A = f(Q_c) f(K_c)^T and the output.
template <class T>
__global__ void __launch_bounds__(kPerformerCudaThreads)
    performer_chunk_output_kernel(const float* __restrict__ query_features, const float* __restrict__ key_features,
                                  const float* __restrict__ key_scale, const float* __restrict__ row_max,
                                  const float* __restrict__ carried_max, const T* __restrict__ v,
                                  const float* __restrict__ chunk_states, const float* __restrict__ chunk_sums,
                                  float* __restrict__ denominators_out, T* __restrict__ out, std::int64_t tokens,
                                  int m, int dv, std::int64_t chunks, int value_tiles) {
  using Layout = PerformerOutputSharedLayout;
  constexpr int kA = kChunkTile + kChunkTilePad;
  extern __shared__ float shared[];
  float* a_tile = shared + Layout::a;
  float* v_tile = shared + Layout::v;
  float* denominators = shared + Layout::denominator;
  float* row_scale = shared + Layout::row_scale;
  float* maxima = shared + Layout::row_max;
  float* scales = shared + Layout::key_scale;

  const ChunkBlockRows at =
      performer_output_chunk(maxima, scales, row_scale, key_scale, row_max, carried_max, tokens, chunks, value_tiles);
  const int rows = at.rows, j0 = at.j0;
  const auto [q_rows, k_rows, v_rows, s_in, z_in] =
      chunk_output_operands(at, query_features, key_features, v, chunk_states, chunk_sums, m, dv);

  const int t = threadIdx.x;
  float acc_a[4][4] = {};
  float acc_o[4][4] = {};
  float denominator = 0.0f;  // threads < 64: f(q_r) . z_in for r = threadIdx.x
  chunk_output_key_loop(
      shared, rows, m, dv, j0, s_in, z_in,
      [=](int r, int i) { return q_rows[static_cast<std::int64_t>(r) * m + i]; },
      [=](int r, int i) { return k_rows[static_cast<std::int64_t>(r) * m + i]; }, acc_a, acc_o, denominator);

  // Inter-chunk part brought from M_in to each row's M_r; intra-chunk weights e^(c_j - M_r) <= 1,
  // causal inclusive (row r sees keys j <= r).
#pragma unroll
  for (int x = 0; x < 4; ++x) {
    const int row = chunk_tile_row(t, x);
    const float scale = row_scale[row];
#pragma unroll
    for (int y = 0; y < 4; ++y) {
      const int j = chunk_tile_column(t, y);
      acc_o[x][y] *= scale;
      a_tile[row * kA + j] = j <= row && row < rows ? acc_a[x][y] * expf(scales[j] - maxima[row]) : 0.0f;
    }
  }
  load_value_tile(v_tile, rows, j0, dv,
                  [=](int r, int j) { return load_float(v_rows[static_cast<std::int64_t>(r) * dv + j]); });
  __syncthreads();
  if (threadIdx.x < kChunkTile) {
    const int r = threadIdx.x;
    denominator *= row_scale[r];
    for (int j = 0; j < kChunkTile; ++j) denominator += a_tile[r * kA + j];
    denominators[r] = denominator;
    if (at.tile.value_tile == 0 && r < rows) denominators_out[at.token_row + r] = denominator;
  }
  accumulate_masked_a_v(shared, rows, acc_o);
  store_chunk_output(shared, acc_o, rows, j0, dv, at.token_rows(out, dv));
}

}  // namespace

void launch_performer_reset_state(std::int64_t batch_heads, std::int64_t features, std::int64_t dv, float* state,
                                  float* normalizer, float* running_max, CUstream_st* stream) {
  const std::int64_t elements = batch_heads * features * dv;
  if (elements == 0) return;
  const std::int64_t blocks = (elements + kPerformerCudaThreads - 1) / kPerformerCudaThreads;
  performer_reset_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), kPerformerCudaThreads, 0, stream>>>(
      state, normalizer, running_max, elements, batch_heads * features, batch_heads);
  check_launch("performer_reset_kernel");
}

template <class T>
void launch_performer_decode(const PerformerDecodePlan& plan, const float* projection, const T* q, const T* k,
                             const T* v, float* state, float* normalizer, float* running_max, T* out,
                             float* denominators, CUstream_st* stream) {
  using D = typename DeviceStorage<T>::type;
  if (plan.blocks == 0) return;
  performer_decode_kernel<D><<<static_cast<unsigned>(plan.blocks), plan.threads, plan.shared_bytes, stream>>>(
      projection, reinterpret_cast<const D*>(q), reinterpret_cast<const D*>(k), reinterpret_cast<const D*>(v), state,
      normalizer, running_max, reinterpret_cast<D*>(out), denominators, plan.dk, plan.dv, plan.features,
      plan.projection_rows, plan.row_groups, plan.kind);
  check_launch("performer_decode_kernel");
}

template <class T>
void launch_performer_prefill(const PerformerPrefillPlan& plan, const float* projection, const bf16* split_projection,
                              const T* q, const T* k, const T* v, float* state, float* normalizer, float* running_max,
                              T* out, float* workspace, CUstream_st* stream) {
  using D = typename DeviceStorage<T>::type;
  const bool tensor_core = plan.prefill_path == PerformerPrefillPath::tensor_core_bf16;
  if (tensor_core && (!std::is_same_v<T, bf16> || split_projection == nullptr)) {
    throw std::invalid_argument("performer: the tensor-core prefill takes bf16 storage and the split projection "
                                "(launch_performer_split_projection)");
  }
  if (plan.tokens == 0 || plan.batch_heads == 0) return;  // nothing to fold in; (S, z, M) unchanged
  const PerformerPrefillWorkspace& w = plan.workspace;
  float* query_features = workspace + w.query_features;
  float* key_features = workspace + w.key_features;
  float* key_scale = workspace + w.key_scale;
  float* row_max = workspace + w.row_max;
  float* carried_max = workspace + w.carried_max;
  float* chunk_states = workspace + w.chunk_states;
  float* chunk_sums = workspace + w.chunk_sums;
  const D* v_d = reinterpret_cast<const D*>(v);
  // The tensor-core path's features are bf16 planes in the same workspace (PerformerPrefillWorkspace).
  [[maybe_unused]] bf16* query_bf16 = reinterpret_cast<bf16*>(query_features);
  [[maybe_unused]] bf16* key_high = reinterpret_cast<bf16*>(key_features);
  [[maybe_unused]] bf16* key_low = reinterpret_cast<bf16*>(workspace + w.key_features_low);
  if constexpr (std::is_same_v<T, bf16>) {
    if (tensor_core) {
      launch_performer_tensor_core_features(plan.tensor_core, plan.batch_heads, split_projection, q, k, query_bf16,
                                            key_high, key_low, key_scale, stream);
    }
  }
  if (!tensor_core) {
    performer_features_kernel<D>
        <<<static_cast<unsigned>(plan.feature_blocks), plan.threads, plan.feature_shared_bytes, stream>>>(
            projection, reinterpret_cast<const D*>(q), reinterpret_cast<const D*>(k), query_features, key_features,
            key_scale, plan.tokens, plan.dk, plan.features, plan.projection_rows, plan.token_tiles, plan.kind);
    check_launch("performer_features_kernel");
  }
  performer_row_max_kernel<<<static_cast<unsigned>(plan.max_blocks), plan.threads, 0, stream>>>(
      key_scale, row_max, running_max, carried_max, plan.tokens);
  check_launch("performer_row_max_kernel");
  if constexpr (std::is_same_v<T, bf16>) {
    if (tensor_core) {  // stages 3 and 4 in one pass, then 5, on tensor cores
      launch_performer_tensor_core_chunk_state_scan(plan, key_high, key_low, key_scale, row_max, carried_max, v, state,
                                                    normalizer, chunk_states, chunk_sums, stream);
      launch_performer_tensor_core_chunk_outputs(plan, query_bf16, key_high, key_scale, row_max, carried_max, v,
                                                 chunk_states, chunk_sums, workspace + w.denominators, out, stream);
      return;
    }
  }
  performer_chunk_state_kernel<D>
      <<<static_cast<unsigned>(plan.state_blocks), plan.threads, plan.state_shared_bytes, stream>>>(
          key_features, key_scale, row_max, v_d, chunk_states, chunk_sums, plan.tokens, plan.features, plan.dv,
          plan.chunks, static_cast<int>(plan.key_tiles), static_cast<int>(plan.value_tiles));
  check_launch("performer_chunk_state_kernel");
  performer_chunk_prefix_kernel<<<static_cast<unsigned>(plan.prefix_blocks), plan.threads, 0, stream>>>(
      chunk_states, chunk_sums, state, normalizer, row_max, carried_max, plan.tokens, plan.features, plan.dv,
      plan.chunks, plan.prefix_blocks / plan.batch_heads);
  check_launch("performer_chunk_prefix_kernel");
  performer_chunk_output_kernel<D>
      <<<static_cast<unsigned>(plan.output_blocks), plan.threads, plan.output_shared_bytes, stream>>>(
          query_features, key_features, key_scale, row_max, carried_max, v_d, chunk_states, chunk_sums,
          workspace + w.denominators, reinterpret_cast<D*>(out), plan.tokens, plan.features, plan.dv, plan.chunks,
          static_cast<int>(plan.value_tiles));
  check_launch("performer_chunk_output_kernel");
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                              \
  template void launch_performer_decode<T>(const PerformerDecodePlan&, const float*, const T*, const T*,       \
                                           const T*, float*, float*, float*, T*, float*, CUstream_st*);        \
  template void launch_performer_prefill<T>(const PerformerPrefillPlan&, const float*, const bf16*, const T*,   \
                                            const T*, const T*, float*, float*, float*, T*, float*, CUstream_st*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
