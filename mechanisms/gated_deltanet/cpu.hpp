#pragma once
// CPU kernels of Gated DeltaNet. q/k/v [batch_heads, tokens, dim] in storage T; the gates g (log
// decay) and beta [batch_heads, tokens] in fp32; the state S [batch_heads, dk, dv] in fp32 whatever
// the storage dtype. q and k are L2-normalised inside the kernels (q also scaled by dk^-1/2), in
// fp32, as flash-linear-attention's use_qk_l2norm_in_kernel does.
#include <cstdint>

#include "mechanisms/common/kernel_variant.hpp"

namespace arch_bench {

struct GatedDeltaNetShape {
  std::int64_t batch_heads = 0;
  std::int64_t dk = 0;
  std::int64_t dv = 0;
};

inline constexpr std::int64_t kGatedDeltaNetChunk = 64;
inline constexpr std::int64_t kGatedDeltaNetMaxDim = 256;  // GatedDeltaNet::unsupported() rejects wider heads

// One decode step, in place: S = alpha (I - beta k k^T) S + beta k v^T, out = S^T q, with
// alpha = exp(g). q/k/v/out hold one token per head ([batch_heads, dim]), g and beta one value per
// head. Two passes over S (S^T k, then the update fused with the read-out); allocates nothing.
template <class T, KernelVariant V = KernelVariant::dispatched>
void gated_deltanet_decode_step(const GatedDeltaNetShape& shape, const T* q, const T* k, const T* v, const float* g,
                                const float* beta, float* state, T* out);

// Causal prefill over `tokens` tokens, chunkwise (64) with the WY/UT representation. Per chunk, with
// G_i the cumulative log decay inside the chunk (G_i = g_0 + ... + g_i) and S_0 the state carried in:
//   A = strictly lower (diag(beta) K K^T o Gamma), Gamma_ij = exp(G_i - G_j)
//   T = (I + A)^-1 diag(beta)
//   U = T V - T diag(exp(G)) K S_0                       (the chunk's new values)
//   O = diag(exp(G)) Q S_0 + (Q K^T o Gamma o causal) U
//   S = exp(G_last) S_0 + (diag(exp(G_last - G)) K)^T U
// Every product is a register-tiled matrix product (mechanisms/common/chunk_matmul.hpp); only the
// triangular solve for T is row by row. `state` carries in and out (zero for a fresh sequence).
template <class T, KernelVariant V = KernelVariant::dispatched>
void gated_deltanet_prefill_chunkwise(const GatedDeltaNetShape& shape, std::int64_t tokens, const T* q, const T* k,
                                      const T* v, const float* g, const float* beta, float* state, T* out);

// The same prefill as a loop of decode steps: the sequential rule the chunkwise one must equal.
template <class T, KernelVariant V = KernelVariant::dispatched>
void gated_deltanet_prefill_recurrent(const GatedDeltaNetShape& shape, std::int64_t tokens, const T* q, const T* k,
                                      const T* v, const float* g, const float* beta, float* state, T* out);

}  // namespace arch_bench
