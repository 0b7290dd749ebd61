#pragma once
// CPU kernels of RWKV-7 (Goose). r, w_raw (decay), k, v, kappa, iclr, out [batch_heads, tokens, dim]
// in storage T (decode: [batch_heads, dim]); the state S [batch_heads, dim(v), dim(k)] fp32, row i
// = value channel (the row-vector convention of rwkv7/reference.hpp).
//
// The prefill is the recurrence, token by token per head (OpenMP over batch x heads, each state row
// vectorised over the key channels). A chunkwise form exists (the WY representation of the products
// of diag(w_t) + a_t^T b_t, as for the delta rule, with a triangular solve per chunk); it has not
// been built and held to the recurrence here, so the prefill is recurrent and the mechanism's title
// says so.
#include <cstdint>

#include "mechanisms/rwkv/kernels.hpp"

namespace arch_bench {

inline std::int64_t rwkv7_state_floats(const RwkvShape& shape) { return shape.batch_heads * shape.dim * shape.dim; }

// Tokens one by one, in place on S (a decode step is tokens = 1). Allocates nothing.
template <class T>
void rwkv7_recurrent(const RwkvShape& shape, std::int64_t tokens, const RwkvTokens<T>& x, float* state, T* out);

}  // namespace arch_bench
