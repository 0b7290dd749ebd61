// CUDA kernels of Mamba's selective scan: a fused decode step and a one-kernel prefill that scans
// each channel's recurrence with cub::BlockScan over (a, b) pairs, chunk after chunk, carrying h in
// shared memory (cuda_plan.hpp describes the geometry). fp32 math throughout; expf and log1pf (not
// the __ intrinsics) keep fp32 within 1e-4 of the fp64 reference.
#include <cub/block/block_scan.cuh>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/common/ssm_activations.cuh"
#include "mechanisms/mamba/cuda.hpp"
#include "core/backends/cuda/cuda_check.hpp"

namespace arch_bench {

namespace {

// ---------------------------------------------------------------------------------------------
// Decode: a group of `lanes` threads per row (MambaDecodePlan). Threads past the last row keep
// running with zeros so that every lane of a warp takes part in the shuffles.
template <class T>
__global__ void __launch_bounds__(kMambaDecodeThreads)
    mamba_decode_kernel(const float* __restrict__ A, const float* __restrict__ dt_bias, const float* __restrict__ D,
                        const T* __restrict__ u, const T* __restrict__ dt_raw, const T* __restrict__ z,
                        const T* __restrict__ B, const T* __restrict__ C, float* __restrict__ state,
                        T* __restrict__ out, std::int64_t rows, int channels, int n, int lanes) {
  const std::int64_t global = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t r = global / lanes;  // mamba_decode_slot
  const int lane = static_cast<int>(global % lanes);
  const bool valid = r < rows;
  const int c = valid ? static_cast<int>(r % channels) : 0;
  const std::int64_t b = valid ? r / channels : 0;
  const float x = valid ? load_float(u[r]) : 0.0f;
  const float dt = valid ? softplus(load_float(dt_raw[r]) + dt_bias[c]) : 0.0f;
  const float du = dt * x;
  float y = 0.0f;
  if (valid) {
    float* h = state + r * n;
    const float* a_row = A + static_cast<std::int64_t>(c) * n;
    const T* b_row = B + b * n;
    const T* c_row = C + b * n;
    for (int s = lane; s < n; s += lanes) {
      const float next = fmaf(expf(dt * a_row[s]), h[s], du * load_float(b_row[s]));
      h[s] = next;
      y = fmaf(load_float(c_row[s]), next, y);
    }
  }
  for (int offset = lanes / 2; offset > 0; offset >>= 1) y += __shfl_xor_sync(0xffffffffu, y, offset);
  if (valid && lane == 0) store_float(out + r, (y + D[c] * x) * silu(load_float(z[r])));
}

// ---------------------------------------------------------------------------------------------
// Prefill: the selective scan.

// ScanElement's combine (cpu.hpp) on (a, b) = float2: "first, then second".
struct Compose {
  __device__ __forceinline__ float2 operator()(float2 first, float2 second) const {
    return make_float2(second.x * first.x, fmaf(second.x, first.y, second.y));
  }
};

// Carries h_s of one channel across chunks: CUB calls it from the first warp with the chunk's
// aggregate, and lane 0's return is the chunk's prefix (h entering the chunk, as the element
// (1, h)). Only lane 0 writes, and the next scan that reads the slot is behind a barrier.
struct CarryPrefix {
  float* carry;
  __device__ float2 operator()(float2 aggregate) {
    const float entering = *carry;
    if (threadIdx.x == 0) *carry = fmaf(aggregate.x, entering, aggregate.y);
    return make_float2(1.0f, entering);
  }
};

template <class T>
__global__ void __launch_bounds__(kMambaScanThreads)
    mamba_scan_kernel(const float* __restrict__ A, const float* __restrict__ dt_bias, const float* __restrict__ D,
                      const T* __restrict__ u, const T* __restrict__ dt_raw, const T* __restrict__ z,
                      const T* __restrict__ B, const T* __restrict__ C, float* __restrict__ state,
                      T* __restrict__ out, std::int64_t tokens, int channels, int n, std::int64_t channel_groups) {
  constexpr int kItems = kMambaScanItems, kChannels = kMambaScanChannels, kGroup = kMambaScanStateGroup;
  using Scan = cub::BlockScan<float2, kMambaScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  extern __shared__ float shared[];
  float* b_tile = shared;                                // [kGroup][stride]
  float* c_tile = b_tile + kGroup * kMambaScanTileStride;  // [kGroup][stride]
  float* carry = c_tile + kGroup * kMambaScanTileStride;   // [kChannels][n]

  const MambaScanRun run = mamba_scan_run(blockIdx.x, channel_groups);
  const int t = threadIdx.x;
  for (int e = t; e < kChannels * n; e += blockDim.x) {
    const int ch = e / n, c = run.first_channel + ch;
    carry[e] = c < channels ? state[(run.batch * channels + c) * static_cast<std::int64_t>(n) + e % n] : 0.0f;
  }
  const T* b_rows = B + run.batch * tokens * n;
  const T* c_rows = C + run.batch * tokens * n;

  for (std::int64_t first = 0; first < tokens; first += kMambaScanChunk) {
    // Per channel and item: dt and dt * u (0 past the sequence or the channels: the identity step).
    float dt[kChannels][kItems], du[kChannels][kItems], y[kChannels][kItems];
#pragma unroll
    for (int ch = 0; ch < kChannels; ++ch) {
      const int c = run.first_channel + ch;
      const std::int64_t row = run.batch * channels + c;
      const float bias = c < channels ? dt_bias[c] : 0.0f;
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const std::int64_t token = first + mamba_scan_token(t, i);
        const bool inside = c < channels && token < tokens;
        const float step = inside ? softplus(load_float(dt_raw[row * tokens + token]) + bias) : 0.0f;
        dt[ch][i] = step;
        du[ch][i] = inside ? step * load_float(u[row * tokens + token]) : 0.0f;
        y[ch][i] = 0.0f;
      }
    }
    for (int s0 = 0; s0 < n; s0 += kGroup) {
      __syncthreads();  // the previous group's tiles are consumed
      for (int e = t; e < kMambaScanChunk * kGroup; e += blockDim.x) {
        const int token = e / kGroup, g = e % kGroup;  // consecutive threads: consecutive entries of a token
        const std::int64_t at = first + token;
        const bool inside = at < tokens && s0 + g < n;
        b_tile[mamba_tile_index(g, token)] = inside ? load_float(b_rows[at * n + s0 + g]) : 0.0f;
        c_tile[mamba_tile_index(g, token)] = inside ? load_float(c_rows[at * n + s0 + g]) : 0.0f;
      }
      __syncthreads();
      const int group_size = n - s0 < kGroup ? n - s0 : kGroup;
      for (int g = 0; g < group_size; ++g) {
        const int s = s0 + g;
#pragma unroll
        for (int ch = 0; ch < kChannels; ++ch) {
          const int c = run.first_channel + ch;
          const float a_s = c < channels ? A[static_cast<std::int64_t>(c) * n + s] : 0.0f;
          float2 steps[kItems];
          float2 aggregate = make_float2(1.0f, 0.0f);
#pragma unroll
          for (int i = 0; i < kItems; ++i) {
            steps[i] = make_float2(expf(dt[ch][i] * a_s), du[ch][i] * b_tile[mamba_tile_index(g, mamba_scan_token(t, i))]);
            aggregate = Compose{}(aggregate, steps[i]);
          }
          float2 entering;
          CarryPrefix prefix{carry + ch * n + s};
          Scan(temp).ExclusiveScan(aggregate, entering, Compose{}, prefix);
          float h = entering.y;
#pragma unroll
          for (int i = 0; i < kItems; ++i) {
            h = fmaf(steps[i].x, h, steps[i].y);
            y[ch][i] = fmaf(c_tile[mamba_tile_index(g, mamba_scan_token(t, i))], h, y[ch][i]);
          }
          __syncthreads();  // temp storage is reused by the next scan
        }
      }
    }
    // out = (y + D u) silu(z)
#pragma unroll
    for (int ch = 0; ch < kChannels; ++ch) {
      const int c = run.first_channel + ch;
      if (c >= channels) continue;
      const std::int64_t row = run.batch * channels + c;
      const float skip = D[c];
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const std::int64_t token = first + mamba_scan_token(t, i);
        if (token >= tokens) continue;
        const std::int64_t at = row * tokens + token;
        store_float(out + at, (y[ch][i] + skip * load_float(u[at])) * silu(load_float(z[at])));
      }
    }
  }
  __syncthreads();  // the last prefix callback's write of `carry`
  for (int e = t; e < kChannels * n; e += blockDim.x) {
    const int ch = e / n, c = run.first_channel + ch;
    if (c < channels) state[(run.batch * channels + c) * static_cast<std::int64_t>(n) + e % n] = carry[e];
  }
}

}  // namespace

template <class T>
void launch_mamba_decode(const MambaDecodePlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                         float* state, T* out, CUstream_st* stream) {
  using S = typename DeviceStorage<T>::type;
  if (plan.blocks == 0) return;
  mamba_decode_kernel<S><<<static_cast<unsigned>(plan.blocks), plan.threads, 0, stream>>>(
      params.A, params.dt_bias, params.D, reinterpret_cast<const S*>(x.u), reinterpret_cast<const S*>(x.dt_raw),
      reinterpret_cast<const S*>(x.z), reinterpret_cast<const S*>(x.B), reinterpret_cast<const S*>(x.C), state,
      reinterpret_cast<S*>(out), plan.rows, plan.channels, plan.state_size, plan.lanes);
  check_launch("mamba_decode_kernel");
}

template <class T>
void launch_mamba_prefill(const MambaPrefillPlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                          float* state, T* out, CUstream_st* stream) {
  using S = typename DeviceStorage<T>::type;
  if (plan.tokens == 0 || plan.blocks == 0) return;  // h unchanged
  mamba_scan_kernel<S><<<static_cast<unsigned>(plan.blocks), plan.threads, plan.shared_bytes, stream>>>(
      params.A, params.dt_bias, params.D, reinterpret_cast<const S*>(x.u), reinterpret_cast<const S*>(x.dt_raw),
      reinterpret_cast<const S*>(x.z), reinterpret_cast<const S*>(x.B), reinterpret_cast<const S*>(x.C), state,
      reinterpret_cast<S*>(out), plan.tokens, plan.channels, plan.state_size, plan.channel_groups);
  check_launch("mamba_scan_kernel");
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                          \
  template void launch_mamba_decode<T>(const MambaDecodePlan&, const MambaParameters&, const MambaTokens<T>&, \
                                       float*, T*, CUstream_st*);                                           \
  template void launch_mamba_prefill<T>(const MambaPrefillPlan&, const MambaParameters&,                    \
                                        const MambaTokens<T>&, float*, T*, CUstream_st*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
