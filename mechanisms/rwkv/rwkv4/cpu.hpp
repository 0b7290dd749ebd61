#pragma once
// CPU kernels of RWKV-4's WKV operator in the numerically stable running-max form. Channels are
// (head, j) pairs: k, v, out [batch_heads, tokens, dim] (decode: [batch_heads, dim]); parameters
// w (> 0) and u [heads, dim] fp32; the state [batch_heads, 3, dim] fp32 holds, per channel,
// a = e^{-p} sum e^{..+k_i} v_i, b = e^{-p} sum e^{..+k_i} and the running exponent p.
// Time is sequential per channel; every loop runs over the dim channels of a head at once
// (vectorised), and OpenMP splits batch x heads.
#include <cstdint>

#include "mechanisms/rwkv/kernels.hpp"
#include "mechanisms/common/kernel_variant.hpp"

namespace arch_bench {

// A fresh state: a = b = 0 and p = -1e38 (finite, so that p - q never makes inf - inf).
void rwkv4_reset_state(const RwkvShape& shape, float* state);
inline std::int64_t rwkv4_state_floats(const RwkvShape& shape) { return shape.batch_heads * 3 * shape.dim; }

// One token per channel, in place on the state. Allocates nothing.
template <class T, KernelVariant V = KernelVariant::dispatched>
void rwkv4_decode_step(const RwkvShape& shape, const RwkvParameters& params, const T* k, const T* v, float* state,
                       T* out);

// Causal prefill over `tokens` tokens; the state carries in and out.
template <class T, KernelVariant V = KernelVariant::dispatched>
void rwkv4_prefill(const RwkvShape& shape, const RwkvParameters& params, std::int64_t tokens, const T* k,
                   const T* v, float* state, T* out);

}  // namespace arch_bench
