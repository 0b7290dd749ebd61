// CUDA kernel of Mamba-2's SSD: the recurrence, one block per (batch, head), one thread per state
// column (cuda_plan.hpp describes the geometry). fp32 math throughout; expf and log1pf (not the __
// intrinsics) keep fp32 within 1e-4 of the fp64 reference. The bf16 prefill runs the chunked SSD
// on tensor cores instead (common/chunk_scalar_decay.cuh). Compiled, not yet run on a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/chunk_scalar_decay.cuh"
#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/common/ssm_activations.hpp"
#include "mechanisms/mamba2/cuda.hpp"

namespace arch_bench {

namespace {

// S = a S + B_t (dt x_t)^T, y = S^T C_t per token; S [N, P] of this block's row stays in global
// memory (32 KiB at N = 128, P = 64: L2-resident), each thread reading and writing its own column.
template <class T>
__global__ void __launch_bounds__(kMamba2CudaMaxThreads)
    mamba2_scan_kernel(const float* __restrict__ A, const float* __restrict__ dt_bias, const float* __restrict__ D,
                       const T* __restrict__ x, const T* __restrict__ dt_raw, const T* __restrict__ z,
                       const T* __restrict__ B, const T* __restrict__ C, float* __restrict__ state,
                       T* __restrict__ out, std::int64_t tokens, int heads, int groups, int p, int n) {
  extern __shared__ float staged[];  // B_t [n], C_t [n]
  float* b_t = staged;
  float* c_t = staged + n;
  const std::int64_t bh = blockIdx.x;
  const int h = static_cast<int>(bh % heads);
  const std::int64_t g = mamba2_cuda_group_row(bh, heads, groups);
  const int j = threadIdx.x;
  const bool owns_column = j < p;
  float* s = state + bh * static_cast<std::int64_t>(n) * p;
  const float a_h = A[h], bias = dt_bias[h], skip = D[h];
  for (std::int64_t t = 0; t < tokens; ++t) {
    __syncthreads();  // every thread has read the previous token's B_t, C_t
    const std::int64_t bc = (g * tokens + t) * n;
    for (int e = j; e < n; e += blockDim.x) {
      b_t[e] = load_float(B[bc + e]);
      c_t[e] = load_float(C[bc + e]);
    }
    __syncthreads();
    const float dt = softplus(load_float(dt_raw[bh * tokens + t]) + bias);
    const float a = expf(dt * a_h);
    if (owns_column) {
      const std::int64_t at = (bh * tokens + t) * p + j;
      const float xv = load_float(x[at]);
      const float u = dt * xv;
      float y = 0.0f;
      for (int e = 0; e < n; ++e) {
        float* cell = s + static_cast<std::int64_t>(e) * p + j;
        const float next = fmaf(a, *cell, u * b_t[e]);
        *cell = next;
        y = fmaf(c_t[e], next, y);
      }
      store_float(out + at, (y + skip * xv) * silu(load_float(z[at])));
    }
  }
}

// Mamba-2's operands for the chunked SSD (S = H^T [N, P]: dk = N, dv = P): k = B_t and q = C_t of
// the head's group, v = dt_t x_t, log a_t = dt_t A_h, and the output stage's epilogue
// (y + D x) silu(z). dt is recomputed where it is needed (a softplus per use) rather than staged by
// a pre-pass: no extra launch or workspace, and the chunk kernels are bound by their products.
struct Mamba2ChunkOperands {
  const float* A;
  const float* dt_bias;
  const float* D;
  const __nv_bfloat16* x;
  const __nv_bfloat16* dt_raw;
  const __nv_bfloat16* z;
  const __nv_bfloat16* B;
  const __nv_bfloat16* C;
  __nv_bfloat16* out;
  std::int64_t tokens;
  int heads;
  int groups;
  int p;
  int n;

  __device__ __forceinline__ int head(std::int64_t bh) const {
    return static_cast<int>(static_cast<unsigned>(bh) % static_cast<unsigned>(heads));
  }
  __device__ __forceinline__ float dt(std::int64_t bh, std::int64_t t) const {
    return softplus(load_float(dt_raw[bh * tokens + t]) + dt_bias[head(bh)]);
  }
  __device__ __forceinline__ float log_decay(std::int64_t bh, std::int64_t t) const { return dt(bh, t) * A[head(bh)]; }
  __device__ __forceinline__ __nv_bfloat16 q_at(std::int64_t bh, std::int64_t t, int i) const {
    return C[(mamba2_cuda_group_row(bh, heads, groups) * tokens + t) * n + i];
  }
  __device__ __forceinline__ __nv_bfloat16 k_at(std::int64_t bh, std::int64_t t, int i) const {
    return B[(mamba2_cuda_group_row(bh, heads, groups) * tokens + t) * n + i];
  }
  __device__ __forceinline__ __nv_bfloat16 v_at(std::int64_t bh, std::int64_t t, int j) const {
    return __float2bfloat16_rn(dt(bh, t) * load_float(x[(bh * tokens + t) * p + j]));
  }
  __device__ __forceinline__ void store(std::int64_t bh, std::int64_t t, int j, float y) const {
    const std::int64_t at = (bh * tokens + t) * p + j;
    store_float(out + at, (y + D[head(bh)] * load_float(x[at])) * silu(load_float(z[at])));
  }
};

}  // namespace

void configure_mamba2_chunked_prefill(const ChunkScalarDecayPlan& plan) {
  configure_chunk_scalar_decay<Mamba2ChunkOperands>(plan);
}

void launch_mamba2_chunked_prefill(const ChunkScalarDecayPlan& plan, const Mamba2CudaPlan& shape,
                                   const Mamba2Parameters& params, const Mamba2Tokens<bf16>& x, float* state,
                                   bf16* out, float* chunk_states, float* chunk_log_decay, CUstream_st* stream) {
  const auto d = [](const bf16* p) { return reinterpret_cast<const __nv_bfloat16*>(p); };
  const Mamba2ChunkOperands operands{params.A,
                                     params.dt_bias,
                                     params.D,
                                     d(x.x),
                                     d(x.dt_raw),
                                     d(x.z),
                                     d(x.B),
                                     d(x.C),
                                     reinterpret_cast<__nv_bfloat16*>(out),
                                     plan.tokens,
                                     shape.heads,
                                     shape.groups,
                                     plan.dv,
                                     plan.dk};
  launch_chunk_scalar_decay(plan, operands, state, chunk_states, chunk_log_decay, stream);
}

template <class T>
void launch_mamba2_scan(const Mamba2CudaPlan& plan, const Mamba2Parameters& params, const Mamba2Tokens<T>& x,
                        float* state, T* out, CUstream_st* stream) {
  using S = typename DeviceStorage<T>::type;
  if (plan.tokens == 0 || plan.blocks == 0) return;  // S unchanged
  mamba2_scan_kernel<S><<<static_cast<unsigned>(plan.blocks), plan.threads, plan.shared_bytes, stream>>>(
      params.A, params.dt_bias, params.D, reinterpret_cast<const S*>(x.x), reinterpret_cast<const S*>(x.dt_raw),
      reinterpret_cast<const S*>(x.z), reinterpret_cast<const S*>(x.B), reinterpret_cast<const S*>(x.C), state,
      reinterpret_cast<S*>(out), plan.tokens, plan.heads, plan.groups, plan.head_dim, plan.state_size);
  check_launch("mamba2_scan_kernel");
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                            \
  template void launch_mamba2_scan<T>(const Mamba2CudaPlan&, const Mamba2Parameters&, const Mamba2Tokens<T>&, \
                                      float*, T*, CUstream_st*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
