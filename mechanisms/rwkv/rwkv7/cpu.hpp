#pragma once
// CPU kernels of RWKV-7 (Goose). r, w_raw (decay), k, v, kappa, iclr, out [batch_heads, tokens, dim]
// in storage T (decode: [batch_heads, dim]). The state is fp32 H = S^T [batch_heads, dim(k), dim(v)]:
// row j = key channel, the transpose of the reference's S [value, key] (rwkv7/reference.hpp; the
// conformance files and rwkv7_state_value_key hold that one). In this column convention, with
// u_t = S_{t-1} a_t (the value the token removes),
//   H_t = diag(w_t) H_{t-1} + b_t u_t^T + k_t v_t^T,   u_t^T = a_t^T H_{t-1},   o_t^T = r_t^T H_t,
// every product is a broadcast key-channel scalar times a row of H: vectorised over the value
// channels with no horizontal sums, and each value column evolves on its own.
//
// rwkv7_recurrent is the decode step (tokens = 1) and the mechanism's prefill while a head's state
// fits L1 (common/prefill_form.hpp: d <= 64): OpenMP over batch x heads; per head, blocks of tokens
// have their decays and widened inputs prepared once, then each slice of value columns walks the
// block's tokens with u and the outputs in registers: one pass over the slice per token, five FMAs
// per state element (x = w H + b u + k v, o += r x, and the next token's u += a x). The row
// convention it replaces (eight S rows at a time, S.a and S.r as horizontal sums) ran level with
// ggml's RWKV_WKV7; results/cpu-kernels.md has the measurements.
// rwkv7_prefill_chunkwise is the same prefill chunkwise (kRwkv7Chunk tokens) in the
// WY/UT form of the delta rule; at d = 64 it does about as many FLOPs per token as the recurrence
// (4 d^2 of inter-chunk products against ~4.5 d^2 element updates) and, measured on a 2-core
// Sapphire Rapids at T = 2048, 8 heads, took 6.5 ms against the column recurrence's 4.2 ms at
// d = 64, 20.3 against 21.9 ms at d = 128 and level at 256, so it is the prefill only for wider
// heads (and the checked alternative in tests and conformance). With G_t = sum of log w over the chunk's
// tokens up to t (per key channel, G_{-1} = 0) and H_0 the state carried in:
//   A_ab[t][s] = sum_j a_tj b_sj e^{G_{t-1,j} - G_{s,j}}, A_ak the same with k_s   (s < t)
//   Q_rb[t][s] = sum_j r_tj b_sj e^{G_{t,j} - G_{s,j}},   Q_rk the same with k_s   (s <= t)
//   U = (I - A_ab)^{-1} (diag(e^{G_{t-1}}) A H_0 + A_ak V)     (a forward substitution)
//   O = diag(e^{G_t}) R H_0 + Q_rb U + Q_rk V
//   H_n = diag(e^{G_{n-1}}) H_0 + (B e^{G_{n-1} - G})^T U + (K e^{G_{n-1} - G})^T V
// which is the recurrence re-associated, not an approximation. The pair weights are factorised as
// (x_t e^{G_{t-1}}) . (y_s e^{-G_s}): RWKV-7's decay is bounded (|log w| <= e^{-0.5}), so over a
// chunk |G| <= 32 e^{-0.5} < 20 nats and e^{+-G} are normal fp32 numbers. e^{G_t} is the running
// product of the w_t over the chunk (the rounding the recurrence does when it scales S by w_t) and
// e^{-G_t} its reciprocal; no exponent spans more than one chunk, so nothing grows with L. Every product
// is register-tiled (common/chunk_matmul.hpp).
#include <cstdint>
#include <vector>

#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/rwkv/kernels.hpp"

namespace arch_bench {

inline std::int64_t rwkv7_state_floats(const RwkvShape& shape) { return shape.batch_heads * shape.dim * shape.dim; }

// The kernels' state H [batch_heads, key, value] as the reference's S [batch_heads, value, key].
inline std::vector<float> rwkv7_state_value_key(const RwkvShape& shape, const std::vector<float>& state) {
  const std::int64_t dim = shape.dim;
  std::vector<float> s(state.size());
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    const float* h = state.data() + bh * dim * dim;
    for (std::int64_t j = 0; j < dim; ++j) {
      for (std::int64_t i = 0; i < dim; ++i) s[bh * dim * dim + i * dim + j] = h[j * dim + i];
    }
  }
  return s;
}

inline constexpr std::int64_t kRwkv7Chunk = 32;  // tokens per chunk of the prefill

// Tokens one by one, in place on H (a decode step is tokens = 1). Allocates nothing.
template <class T, KernelVariant V = KernelVariant::dispatched>
void rwkv7_recurrent(const RwkvShape& shape, std::int64_t tokens, const RwkvTokens<T>& x, float* state, T* out);

// Causal prefill, chunkwise (above); the state H [key, value] carries in and out (zero for a fresh
// sequence), as for rwkv7_recurrent. Allocates nothing (the chunk buffers are on the stack).
template <class T, KernelVariant V = KernelVariant::dispatched>
void rwkv7_prefill_chunkwise(const RwkvShape& shape, std::int64_t tokens, const RwkvTokens<T>& x, float* state,
                             T* out);

}  // namespace arch_bench
