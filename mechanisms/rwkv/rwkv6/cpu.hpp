#pragma once
// CPU kernels of RWKV-6 (Finch). r, k, v, d, out [batch_heads, tokens, dim] in storage T (decode:
// [batch_heads, dim]); u [heads, dim] fp32; the state S [batch_heads, dim(k), dim(v)] fp32.
// Per key channel i the log-decay is g = log w = -exp(d), clamped at -100 (w < 4e-44 is 0 in fp32
// either way), so that cumulative sums over a chunk stay finite.
#include <cstdint>

#include "mechanisms/rwkv/kernels.hpp"
#include "mechanisms/common/kernel_variant.hpp"

namespace arch_bench {

inline constexpr std::int64_t kRwkv6Chunk = 64;     // tokens per chunk of the prefill
inline constexpr std::int64_t kRwkv6SubChunk = 16;  // diagonal blocks computed pair by pair

inline std::int64_t rwkv6_state_floats(const RwkvShape& shape) { return shape.batch_heads * shape.dim * shape.dim; }

// Tokens one by one (the recurrence; a decode step is tokens = 1), in place on S. Allocates nothing.
template <class T, KernelVariant V = KernelVariant::dispatched>
void rwkv6_recurrent(const RwkvShape& shape, const RwkvParameters& params, std::int64_t tokens,
                     const RwkvTokens<T>& x, float* state, T* out);

// Causal prefill, chunkwise (chunks of kRwkv6Chunk), with cumulative log-decays B_t = sum_{s<=t} g_s
// inside the chunk:
//   inter-chunk  o_t  = (r_t * e^{B_{t-1}})^T S_0
//   intra-chunk  o_t += sum_{s<t} [sum_i r_ti k_si e^{B_{t-1,i} - B_{s,i}}] v_s + (r_t . (u * k_t)) v_t
//   state        S_n  = diag(e^{B_{n-1}}) S_0 + sum_s diag(e^{B_{n-1} - B_s}) k_s v_s^T
// with B the cumulative log-decay inside the chunk. Every exponent is a sum of log-decays <= 0 over
// the tokens between two positions, never a lone -B (which overflows once a chunk's decays pass 88
// nats) and never a difference of two long cumulative sums (which loses |B| x 2^-24 of the
// exponent): blocks of different sub-chunks (kRwkv6SubChunk) factor the pair weight as
// e^{(t's sub-chunk start .. t-1)} e^{(the sub-chunks between)} e^{(s+1 .. s's sub-chunk end)},
// three factors <= 1, and pairs inside one sub-chunk take their own running sums.
// A chunk whose decays sum to at most 80 nats on every key channel (the drawn inputs' ~30 nats per
// chunk; 80 keeps |k| e^{80} far inside fp32) takes the factorised form instead: pair weights
// (r_t e^{B_{t-1}}) . (k_s e^{-B_s}) with e^{B} the running product of the w's, and the chunk is three
// register-tiled products (common/chunk_matmul.hpp). Both paths are the same sums; which one a chunk
// takes depends only on its decays.
// The state carries in and out (zero for a fresh sequence).
template <class T, KernelVariant V = KernelVariant::dispatched>
void rwkv6_prefill_chunkwise(const RwkvShape& shape, const RwkvParameters& params, std::int64_t tokens,
                             const RwkvTokens<T>& x, float* state, T* out);

// Floating-point operations of one chunk of n tokens (transcendentals count one): on the factorised
// path and on the sub-chunk path.
double rwkv6_factorised_chunk_flops(std::int64_t n, std::int64_t dim);
double rwkv6_chunk_flops(std::int64_t n, std::int64_t dim);

}  // namespace arch_bench
