#pragma once
// What the three RWKV generations' CPU kernels share: the cell's shape, the per-channel parameters,
// the per-token inputs, and the vectorisable scalar maps. Layouts follow the attention mechanisms:
// every per-token input is [batch_heads, tokens, dim] in the storage dtype (decode: [batch_heads,
// dim]), parameters are fp32 [heads, dim] shared by the batch, states are fp32.
#include <bit>
#include <cstdint>

#include "mechanisms/common/fast_math.hpp"
#include "mechanisms/common/float8.hpp"
#include "mechanisms/common/parallel_policy.hpp"
#include "mechanisms/common/wide_vector.hpp"

namespace arch_bench {

struct RwkvShape {
  std::int64_t batch_heads = 0;
  std::int64_t heads = 0;  // parameters are indexed by bh % heads
  std::int64_t dim = 0;    // head_dim: dk = dv = dim
};

// Per-channel parameters, fp32 [heads, dim]. rwkv4: w = exp(time_decay) > 0 (the decay rate of
// seed 002's formula) and u = time_first; rwkv6: u = time_faaaa (the bonus); rwkv7: none.
struct RwkvParameters {
  const float* w = nullptr;
  const float* u = nullptr;
};

// Per-token inputs; a generation reads only its own (rwkv4: k, v; rwkv6: r, k, v, decay = d_t;
// rwkv7: r, k, v, decay = w_raw, kappa, iclr), the others may be null.
template <class T>
struct RwkvTokens {
  const T* r = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  const T* decay = nullptr;
  const T* kappa = nullptr;
  const T* iclr = nullptr;
};

// Head dims up to this fit the kernels' stack scratch (Mechanism::unsupported rejects wider heads).
inline constexpr std::int64_t kRwkvMaxDim = 256;

// Below this many state elements x tokens a call stays on the calling thread
// (common/parallel_policy.hpp).
inline constexpr std::int64_t kRwkvParallelWork = kParallelStateElements;

// RWKV-6's log-decay log w = -exp(d) (<= 0) and RWKV-7's log w = -e^{-0.5} sigmoid(w_raw), one
// channel at a time and eight (float8: the decode steps' prologue; rwkv7 also a wide_vector's lanes).
inline constexpr float kRwkv7DecayScale = 0.60653065971263342f;  // e^{-0.5}
ARCH_BENCH_KERNEL_HELPERS_BEGIN
#pragma omp declare simd
inline float rwkv6_log_decay(float d) { return -exp_clamped(d); }
inline float8 rwkv6_log_decay(float8 d) { return -exp_clamped(d); }
#pragma omp declare simd
inline float rwkv7_log_decay(float w_raw) { return -kRwkv7DecayScale / (1.0f + exp_clamped(-w_raw)); }
inline float8 rwkv7_log_decay(float8 w_raw) { return -kRwkv7DecayScale / (1.0f + exp_clamped(-w_raw)); }
#if defined(__AVX512F__)
inline wide_vector rwkv7_log_decay(wide_vector w_raw) { return -kRwkv7DecayScale / (1.0f + exp_clamped(-w_raw)); }
#endif

ARCH_BENCH_KERNEL_HELPERS_END
}  // namespace arch_bench
