#pragma once
// CPU kernels of causal linear attention. Inputs [batch_heads, tokens, dim] in storage T; the
// state S [batch_heads, dk, dv] and normaliser z [batch_heads, dk] are fp32: a bf16 running sum
// stops absorbing increments once it is ~256x larger than them, which happens within a few
// hundred tokens, so the state is kept in fp32 whatever the storage dtype. Each kernel is dispatched
// to the ISA variant the CPU runs best (common/kernel_variant.hpp); V names one variant explicitly.
#include <cstdint>

#include "mechanisms/common/feature_maps.hpp"
#include "mechanisms/common/kernel_variant.hpp"

namespace arch_bench {

struct LinearAttentionShape {
  std::int64_t batch_heads = 0;
  std::int64_t dk = 0;
  std::int64_t dv = 0;
  FeatureMap map = FeatureMap::elu_plus_one;
};

inline constexpr std::int64_t kLinearAttentionChunk = 64;

// One decode step, in place: S += phi(k) v^T, z += phi(k), out = phi(q)^T S / phi(q)^T z.
// q/k/v/out hold one token per head ([batch_heads, dim]). Allocates nothing.
template <class T, KernelVariant V = KernelVariant::dispatched>
void linear_attention_decode_step(const LinearAttentionShape& shape, const T* q, const T* k,
                                  const T* v, float* state, float* normalizer, T* out);

// Causal prefill over `tokens` tokens, chunkwise: per chunk of 64, the inter-chunk part reads the
// state carried in from earlier chunks and the intra-chunk part is a masked phi(Q) phi(K)^T V
// product; then the chunk is folded into the state. `state`/`normalizer` carry in and out, so a
// prefill continues from whatever context they hold (zero for a fresh sequence).
template <class T, KernelVariant V = KernelVariant::dispatched>
void linear_attention_prefill_chunkwise(const LinearAttentionShape& shape, std::int64_t tokens,
                                        const T* q, const T* k, const T* v, float* state,
                                        float* normalizer, T* out);

// The same prefill as a loop of decode steps per head (OpenMP over heads): the recurrent form the
// chunkwise one must equal.
template <class T, KernelVariant V = KernelVariant::dispatched>
void linear_attention_prefill_recurrent(const LinearAttentionShape& shape, std::int64_t tokens,
                                        const T* q, const T* k, const T* v, float* state,
                                        float* normalizer, T* out);

// The prefill the mechanism runs: the recurrence when a head's state fits L1
// (common/prefill_form.hpp), the chunk form otherwise. Measured on a 2-core Zen 3 (AVX2, fp32,
// hot, 2 threads, 8 heads): at d = 64 the recurrence took 4.1-4.9 ms against 5.5-5.7 ms at
// T = 2048, and 16.2-23.2 against 20.8-22.1 ms at T = 8192; at d = 128 (4 heads, T = 2048) the two
// were level (7.6-8.1 against 7.8-11.1 ms), so wider heads keep the chunk form.
template <class T, KernelVariant V = KernelVariant::dispatched>
void linear_attention_prefill(const LinearAttentionShape& shape, std::int64_t tokens, const T* q, const T* k,
                              const T* v, float* state, float* normalizer, T* out);

}  // namespace arch_bench
