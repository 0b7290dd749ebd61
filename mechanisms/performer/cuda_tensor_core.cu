// Stage 1 of Performer's bf16 prefill on tensor cores: the projections [64 tokens x dk] x [dk x n]
// as wmma bf16 products (16 x 16 x 16) with fp32 accumulators, from the projection split once per
// cell into W_hi + W_lo (cuda_plan.hpp says why two products), then the same stabilised features and
// key log-scales the SIMT feature kernel (cuda.cu) computes. The features are stored as their
// readers take them (PerformerPrefillWorkspace): phi(q) as bf16, phi(k) as bf16 hi + lo planes; the
// stabilisers (each token's largest projection) and the key log-scales stay fp32 from the fp32
// projections. The CPU replay of this arithmetic is cuda_replay.cpp. Compiled, not yet run on a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cmath>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/performer/cuda.hpp"
#include "mechanisms/performer/cuda_trig.hpp"

namespace arch_bench {

namespace {

constexpr int kF = kPerformerTensorCoreFragment;
constexpr int kTokens = kPerformerTensorCoreTokens;
constexpr int kRowTiles = kTokens / kF;
constexpr int kWarps = kPerformerTensorCoreWarps;
constexpr float kEps = static_cast<float>(kPerformerEpsilon);

// Grid-stride over the padded [dk_padded][columns_padded]: W_hi at e, W_lo one part further. W - W_hi
// is exact in fp32 (W_hi holds W's leading 8 bits), so W_lo is W's next 8 bits rounded once.
__global__ void __launch_bounds__(kPerformerCudaThreads)
    performer_split_projection_kernel(PerformerTensorCoreFeaturePlan plan, const float* __restrict__ projection,
                                      __nv_bfloat16* __restrict__ split) {
  const std::int64_t part = plan.split_part_elements();
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < part;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int d = static_cast<int>(e / plan.columns_padded), i = static_cast<int>(e % plan.columns_padded);
    const float w = d < plan.dk && i < plan.projection_rows
                        ? projection[static_cast<std::int64_t>(d) * plan.projection_rows + i]
                        : 0.0f;
    const __nv_bfloat16 high = __float2bfloat16_rn(w);
    split[e] = high;
    split[part + e] = __float2bfloat16_rn(w - __bfloat162float(high));
  }
}

using namespace nvcuda;
using Accumulator = wmma::fragment<wmma::accumulator, kF, kF, kF, float>;

// The projections of the tile's four 16-token row tiles onto column tile `column_tile`: for each
// 16-wide step of dk, x W_hi then x W_lo into the same fp32 accumulator (the order the replay
// follows). Row tiles wholly past the sequence are skipped (their rows are never read).
__device__ __forceinline__ void project_column_tile(const PerformerTensorCoreFeaturePlan& plan,
                                                    const __nv_bfloat16* __restrict__ x,
                                                    const __nv_bfloat16* __restrict__ high,
                                                    const __nv_bfloat16* __restrict__ low, int column_tile,
                                                    int row_tiles, Accumulator (&acc)[kRowTiles]) {
#pragma unroll
  for (int rt = 0; rt < kRowTiles; ++rt) wmma::fill_fragment(acc[rt], 0.0f);
  for (int kk = 0; kk < plan.dk_padded / kF; ++kk) {
    // W [dk][n] row-major is the B operand as it is: element (d, i) at d * columns_padded + i.
    wmma::fragment<wmma::matrix_b, kF, kF, kF, __nv_bfloat16, wmma::row_major> b_high, b_low;
    const std::int64_t at = static_cast<std::int64_t>(kk) * kF * plan.columns_padded + column_tile * kF;
    wmma::load_matrix_sync(b_high, high + at, plan.columns_padded);
    wmma::load_matrix_sync(b_low, low + at, plan.columns_padded);
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) {
      if (rt < row_tiles) {
        wmma::fragment<wmma::matrix_a, kF, kF, kF, __nv_bfloat16, wmma::row_major> a;
        wmma::load_matrix_sync(a, x + rt * kF * plan.ld_x + kk * kF, plan.ld_x);
        wmma::mma_sync(acc[rt], a, b_high, acc[rt]);
        wmma::mma_sync(acc[rt], a, b_low, acc[rt]);
      }
    }
  }
}

// One block per (head, 64-token tile, queries or keys); plan: PerformerTensorCoreFeaturePlan.
__global__ void __launch_bounds__(kPerformerCudaThreads)
    performer_tensor_core_features_kernel(PerformerTensorCoreFeaturePlan plan, const __nv_bfloat16* __restrict__ split,
                                          const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                                          __nv_bfloat16* __restrict__ query_features,
                                          __nv_bfloat16* __restrict__ key_high, __nv_bfloat16* __restrict__ key_low,
                                          float* __restrict__ key_scale) {
  extern __shared__ __align__(128) unsigned char shared[];
  auto* x = reinterpret_cast<__nv_bfloat16*>(shared + plan.x);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  float* stage = reinterpret_cast<float*>(shared + plan.stage) + warp * kF * kF;
  float* partial = reinterpret_cast<float*>(shared + plan.partial);  // [warps][64]
  float* top = reinterpret_cast<float*>(shared + plan.top);
  float* half_norm = reinterpret_cast<float*>(shared + plan.half_norm);

  const PerformerFeatureTile tile = performer_feature_block(blockIdx.x, plan.token_tiles, kTokens);
  const std::int64_t first = tile.first_token;
  const int rows = plan.tokens - first < kTokens ? static_cast<int>(plan.tokens - first) : kTokens;
  const int row_tiles = (rows + kF - 1) / kF;
  const int dk = plan.dk, n = plan.projection_rows, m = plan.features;
  const __nv_bfloat16* source = (tile.keys ? k : q) + (tile.bh * plan.tokens + first) * dk;
  // The tile's rows of phi(q) (bf16), or of phi(k) as bf16 hi and lo (low is null for queries).
  const std::int64_t row0 = (tile.bh * plan.tokens + first) * m;
  __nv_bfloat16* features = (tile.keys ? key_high : query_features) + row0;
  __nv_bfloat16* features_low = tile.keys ? key_low + row0 : nullptr;
  const __nv_bfloat16* high = split;
  const __nv_bfloat16* low = split + plan.split_part_elements();

  // x [64][dk_padded] (bf16 as stored: exact), zero past the sequence and past dk.
  for (int e = threadIdx.x; e < kTokens * plan.dk_padded; e += blockDim.x) {
    const int r = e / plan.dk_padded, d = e % plan.dk_padded;
    x[r * plan.ld_x + d] = r < rows && d < dk ? source[static_cast<std::int64_t>(r) * dk + d] : __float2bfloat16_rn(0.0f);
  }
  __syncthreads();
  // |x~|^2 / 2 per token, in the SIMT kernel's order.
  if (threadIdx.x < kTokens) {
    const int r = threadIdx.x;
    float norm = 0.0f;
    for (int d = 0; d < dk; ++d) {
      const float value = __bfloat162float(x[r * plan.ld_x + d]);
      norm = fmaf(value, value, norm);
    }
    half_norm[r] = norm * (0.5f / sqrtf(static_cast<float>(dk)));
  }

  const bool trig = plan.kind == PerformerFeatures::trig;
  const int column_tiles = plan.columns_padded / kF;
  Accumulator acc[kRowTiles];
  if (!trig) {
    // Pass 1 (favor+): each token's largest projection. Lane l reads row l / 2, columns
    // 8 (l % 2) .. + 8 of the staged tile; the pair of lanes of a row then combines.
    float lane_top[kRowTiles];
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) lane_top[rt] = -INFINITY;
    const int r = lane / 2, c0 = (lane % 2) * 8;
    for (int ct = warp; ct < column_tiles; ct += kWarps) {
      project_column_tile(plan, x, high, low, ct, row_tiles, acc);
#pragma unroll
      for (int rt = 0; rt < kRowTiles; ++rt) {
        if (rt < row_tiles) {
          wmma::store_matrix_sync(stage, acc[rt], kF, wmma::mem_row_major);
          __syncwarp();
#pragma unroll
          for (int c = 0; c < 8; ++c) {
            if (ct * kF + c0 + c < n) lane_top[rt] = fmaxf(lane_top[rt], stage[r * kF + c0 + c]);
          }
          __syncwarp();  // the next store overwrites the staging tile
        }
      }
    }
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) {
      const float t = fmaxf(lane_top[rt], __shfl_xor_sync(0xffffffffu, lane_top[rt], 1));
      if (lane % 2 == 0) partial[warp * kTokens + rt * kF + r] = t;
    }
  }
  __syncthreads();  // partial maxima and half_norm complete
  if (threadIdx.x < kTokens) {
    const int r = threadIdx.x;
    float t = -INFINITY;
    if (!trig) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) t = fmaxf(t, partial[w * kTokens + r]);
    }
    top[r] = t;
    if (tile.keys && r < rows) key_scale[tile.bh * plan.tokens + first + r] = trig ? half_norm[r] : t - half_norm[r];
  }
  __syncthreads();

  // Pass 2: the features. Lane l writes column l % 16 of rows l / 16, l / 16 + 2, ...: 16 lanes
  // store 16 consecutive elements of a row, and read 16 consecutive staged floats (no bank conflict).
  // Each feature is computed in fp32 and rounded on the way out: once (queries), or as hi + lo
  // (keys: hi = bf16(phi), lo = bf16(phi - hi), phi - hi exact in fp32).
  const auto store = [&](std::int64_t at, float phi) {
    const __nv_bfloat16 high = __float2bfloat16_rn(phi);
    features[at] = high;
    if (features_low != nullptr) features_low[at] = __float2bfloat16_rn(phi - __bfloat162float(high));
  };
  const float ratio = trig ? sqrtf(2.0f / static_cast<float>(m)) : 1.0f / sqrtf(static_cast<float>(m));
  const int column = lane % kF;
  for (int ct = warp; ct < column_tiles; ct += kWarps) {
    project_column_tile(plan, x, high, low, ct, row_tiles, acc);
    const int i = ct * kF + column;
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) {
      if (rt < row_tiles) {
        wmma::store_matrix_sync(stage, acc[rt], kF, wmma::mem_row_major);
        __syncwarp();
        if (i < n) {
#pragma unroll 1
          for (int h = 0; h < kF / 2; ++h) {
            const int rr = lane / kF + 2 * h, row = rt * kF + rr;
            if (row < rows) {
              const float p = stage[rr * kF + column];
              const std::int64_t out = static_cast<std::int64_t>(row) * m + i;
              if (trig) {
                float s, c;
                performer_trig_pair(p, &s, &c);
                store(out, ratio * s);
                store(out + n, ratio * c);
              } else {
                store(out, ratio * (expf(p - top[row]) + kEps));
              }
            }
          }
        }
        __syncwarp();
      }
    }
  }
}

// Enough blocks to cover the split in one pass, capped (the loop strides) far below the grid limit.
unsigned split_blocks(std::int64_t elements) {
  return static_cast<unsigned>(
      std::clamp<std::int64_t>((elements + kPerformerCudaThreads - 1) / kPerformerCudaThreads, 1, 4096));
}

}  // namespace

void launch_performer_split_projection(const PerformerTensorCoreFeaturePlan& plan, const float* projection,
                                       bf16* split, CUstream_st* stream) {
  performer_split_projection_kernel<<<split_blocks(plan.split_part_elements()), kPerformerCudaThreads, 0, stream>>>(
      plan, projection, reinterpret_cast<__nv_bfloat16*>(split));
  check_launch("performer_split_projection_kernel");
}

void launch_performer_tensor_core_features(const PerformerTensorCoreFeaturePlan& plan, std::int64_t batch_heads,
                                           const bf16* split, const bf16* q, const bf16* k, bf16* query_features,
                                           bf16* key_high, bf16* key_low, float* key_scale, CUstream_st* stream) {
  if (plan.tokens == 0 || batch_heads == 0) return;
  performer_tensor_core_features_kernel<<<static_cast<unsigned>(plan.blocks), kPerformerCudaThreads, plan.shared_bytes,
                                          stream>>>(
      plan, reinterpret_cast<const __nv_bfloat16*>(split), reinterpret_cast<const __nv_bfloat16*>(q),
      reinterpret_cast<const __nv_bfloat16*>(k), reinterpret_cast<__nv_bfloat16*>(query_features),
      reinterpret_cast<__nv_bfloat16*>(key_high), reinterpret_cast<__nv_bfloat16*>(key_low), key_scale);
  check_launch("performer_tensor_core_features_kernel");
}

}  // namespace arch_bench
