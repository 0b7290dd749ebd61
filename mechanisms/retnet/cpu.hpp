#pragma once
// CPU kernels of multi-scale retention. Inputs [batch_heads, tokens, dim] in storage T (batch-major:
// row bh = b * heads + h); the state S [batch_heads, dk, dv] is fp32 whatever the storage dtype (a
// bf16 state would stop absorbing k v^T once it is ~256x larger than them). Head h decays by
// gamma[h] (retnet_gamma(h) in a run; tests pass decays near 0 and near 1).
#include <cstdint>

#include "mechanisms/common/kernel_variant.hpp"

namespace arch_bench {

struct RetNetShape {
  std::int64_t batch_heads = 0;
  std::int64_t heads = 0;  // gamma is per head: row bh uses gamma[bh % heads]
  std::int64_t dk = 0;
  std::int64_t dv = 0;
};

inline constexpr std::int64_t kRetNetChunk = 64;
inline constexpr std::int64_t kRetNetMaxDim = 256;  // RetNet::unsupported() rejects wider heads

// One decode step, in place: S = gamma S + k v^T, out = S^T q. q/k/v/out hold one token per head
// ([batch_heads, dim]). One pass over S; allocates nothing.
template <class T, KernelVariant V = KernelVariant::dispatched>
void retnet_decode_step(const RetNetShape& shape, const double* gamma, const T* q, const T* k, const T* v,
                        float* state, T* out);

// Causal prefill over `tokens` tokens, chunkwise (64): per chunk, with S_0 the state carried in,
// O = diag(gamma^(i+1)) Q S_0 + (Q K^T o D) V, D_ij = gamma^(i-j) for i >= j else 0, and
// S = gamma^C S_0 + (diag(gamma^(C-1-j)) K)^T V. The products are register-tiled matrix products
// (mechanisms/common/chunk_matmul.hpp). `state` carries in and out (zero for a fresh sequence).
template <class T, KernelVariant V = KernelVariant::dispatched>
void retnet_prefill_chunkwise(const RetNetShape& shape, const double* gamma, std::int64_t tokens, const T* q,
                              const T* k, const T* v, float* state, T* out);

// The same prefill as a loop of decode steps: the recurrent form the chunkwise one must equal.
template <class T, KernelVariant V = KernelVariant::dispatched>
void retnet_prefill_recurrent(const RetNetShape& shape, const double* gamma, std::int64_t tokens, const T* q,
                              const T* k, const T* v, float* state, T* out);

}  // namespace arch_bench
