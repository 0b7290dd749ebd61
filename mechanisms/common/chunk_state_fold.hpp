#pragma once
// The last steps of a chunk in the CPU chunk forms whose decay is one scalar per token (RetNet's
// gamma_h, Gated DeltaNet's exp(g_t), Mamba-2's exp(dt_t A_h)): the chunk's output rows out of the
// fp32 product buffer, and the chunk folded into the head's state,
//   S = carry S + (diag(to_last) K)^T U,
// carry being the decay over the whole chunk and to_last[j] the decay from token j to the chunk's
// last. RetNet's U is V; Gated DeltaNet's is the delta rule's U (its T V - W S_0 term); Mamba-2's
// K is B and U is dt x.
#include <cstdint>

#include "core/bf16.hpp"
#include "core/kernel_helpers.hpp"
#include "mechanisms/common/chunk_matmul.hpp"

namespace arch_bench {
ARCH_BENCH_KERNEL_HELPERS_BEGIN

// Rows [begin, begin + rows) of out [tokens, dv] from outputs [rows, dv] (fp32), rounded to T.
template <class T>
inline void store_chunk_outputs(T* out, std::int64_t begin, std::int64_t rows, std::int64_t dv, const float* outputs) {
  for (std::int64_t r = 0; r < rows; ++r) {
    T* o = out + (begin + r) * dv;
    for (std::int64_t j = 0; j < dv; ++j) o[j] = from_float<T>(outputs[r * dv + j]);
  }
}

// keys_t: K^T [dk, ld_keys] of the chunk's `rows` tokens, scaled in place by to_last[0..rows);
// u [rows, dv]; state [dk, dv].
inline void fold_chunk_into_state(std::int64_t dk, std::int64_t dv, std::int64_t rows, float carry,
                                  const float* to_last, float* keys_t, std::int64_t ld_keys, const float* u,
                                  float* state) {
#pragma omp simd
  for (std::int64_t e = 0; e < dk * dv; ++e) state[e] *= carry;
  for (std::int64_t i = 0; i < dk; ++i) {
#pragma omp simd
    for (std::int64_t c = 0; c < rows; ++c) keys_t[i * ld_keys + c] *= to_last[c];
  }
  chunk_matmul(dk, dv, rows, keys_t, ld_keys, u, dv, state, dv, {.accumulate = true});
}

ARCH_BENCH_KERNEL_HELPERS_END
}  // namespace arch_bench
