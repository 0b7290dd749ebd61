// CUDA scan of RWKV-4's WKV operator: the decode step and the prefill (cuda_plan.hpp). One thread
// per channel (bh, j) carries the stable state (a, b, p) in registers through the tokens, as
// rwkv4_wkv_stable does in fp64: the sums are kept relative to the running maximum exponent p, so
// no exp sees a positive argument whatever k, u and the length (the naive form overflows once
// k passes ~89 in fp32). Channels are contiguous in memory within a token: a warp's loads of k and
// v and its stores of the output are coalesced. expf (not __expf) keeps fp32 within 1e-4.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/scan_instances.cuh"

namespace arch_bench {

namespace {

// p of a fresh state: finite, so that p - q never makes inf - inf (rwkv4/cpu.hpp).
constexpr float kFreshExponent = -1e38f;

__global__ void __launch_bounds__(kRwkvCudaThreads)
    rwkv4_reset_kernel(float* __restrict__ state, std::int64_t channels, int dim) {
  const std::int64_t c = rwkv4_scan_channel(blockIdx.x, threadIdx.x, static_cast<int>(blockDim.x));
  if (c >= channels) return;
  float* s = state + (c / dim) * 3 * dim + c % dim;
  s[0] = 0.0f;
  s[dim] = 0.0f;
  s[2 * dim] = kFreshExponent;
}

template <class T>
__global__ void __launch_bounds__(kRwkvCudaThreads)
    rwkv4_scan_kernel(const T* __restrict__ k, const T* __restrict__ v, const float* __restrict__ w,
                      const float* __restrict__ u, float* __restrict__ state, T* __restrict__ out,
                      std::int64_t tokens, std::int64_t channels, int dim, std::int64_t heads) {
  const std::int64_t c = rwkv4_scan_channel(blockIdx.x, threadIdx.x, static_cast<int>(blockDim.x));
  if (c >= channels) return;
  const std::int64_t bh = c / dim;
  const int j = static_cast<int>(c % dim);
  const std::int64_t parameter = (bh % heads) * dim + j;
  const float wc = w[parameter], uc = u[parameter];
  float* s = state + bh * 3 * dim + j;
  float a = s[0], b = s[dim], p = s[2 * dim];
  const std::int64_t first = bh * tokens * dim + j;
  // The state's chain through the tokens is serial, the loads are not: a batch of tokens' k and v
  // is loaded before the batch is folded in, so their latencies overlap instead of adding up (a
  // prefill at B16 H8 d64 has only ~2 warps per SM to hide them).
  constexpr int kBatch = 8;
  for (std::int64_t t0 = 0; t0 < tokens; t0 += kBatch) {
    float kb[kBatch], vb[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const bool in_range = t0 + i < tokens;
      kb[i] = in_range ? load_float(k[first + (t0 + i) * dim]) : 0.0f;
      vb[i] = in_range ? load_float(v[first + (t0 + i) * dim]) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (t0 + i >= tokens) break;
      const float kt = kb[i], vt = vb[i];
      // Output: the state's sums plus the current token at e^{u + k_t}, both relative to q.
      const float bonus = uc + kt;
      float q = fmaxf(p, bonus);
      float e1 = expf(p - q), e2 = expf(bonus - q);
      store_float(out + first + (t0 + i) * dim, (e1 * a + e2 * vt) / (e1 * b + e2));
      // Update: decay the sums by e^{-w}, add e^{k_t}.
      const float decayed = p - wc;
      q = fmaxf(decayed, kt);
      e1 = expf(decayed - q);
      e2 = expf(kt - q);
      a = fmaf(e1, a, e2 * vt);
      b = fmaf(e1, b, e2);
      p = q;
    }
  }
  s[0] = a;
  s[dim] = b;
  s[2 * dim] = p;
}

}  // namespace

void launch_rwkv4_reset(const RwkvScanPlan& plan, float* state, CUstream_st* stream) {
  if (plan.blocks == 0) return;
  rwkv4_reset_kernel<<<static_cast<unsigned>(plan.blocks), plan.threads, 0, stream>>>(
      state, plan.batch_heads * plan.dim, plan.dim);
  check_launch("rwkv4_reset_kernel");
}

template <class T>
void launch_rwkv4_scan(const RwkvScanPlan& plan, const RwkvParameters& params, const RwkvTokens<T>& x, float* state,
                       T* out, CUstream_st* stream) {
  using D = typename DeviceStorage<T>::type;
  if (plan.tokens == 0 || plan.blocks == 0) return;  // nothing to fold in; the state unchanged
  rwkv4_scan_kernel<D><<<static_cast<unsigned>(plan.blocks), plan.threads, 0, stream>>>(
      reinterpret_cast<const D*>(x.k), reinterpret_cast<const D*>(x.v), params.w, params.u, state,
      reinterpret_cast<D*>(out), plan.tokens, plan.batch_heads * plan.dim, plan.dim, plan.heads);
  check_launch("rwkv4_scan_kernel");
}

ARCH_BENCH_RWKV_SCAN_INSTANCES(launch_rwkv4_scan)

}  // namespace arch_bench
