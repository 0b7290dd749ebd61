#pragma once
// Prepared-cell checks of the mechanisms whose fp64 reference runs per (batch, head) row
// (linear_attention, retnet, gated_deltanet, rwkv): the outputs against the reference's rows. A
// reference is reference(bh, rows) -> the outputs [rows, width] (MatrixD) of row bh over tokens
// [0, rows).
#include <cstdint>

#include "core/stop_request.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// Decode at position `position`: out [batch_heads, width] against row `position` of each head's
// reference over position + 1 tokens.
template <class T, class Reference>
Accuracy check_decode_heads(const T* out, std::int64_t batch_heads, std::int64_t width, std::int64_t position,
                            const Reference& reference) {
  ErrorAccumulator errors;
  for (std::int64_t bh = 0; bh < batch_heads; ++bh) {
    // A check of 10^5 heads takes minutes: a SIGTERM is seen between two heads (core/stop_request.hpp).
    throw_if_stop_requested("checking the outputs against the fp64 reference");
    const MatrixD ref = reference(bh, position + 1);
    errors.add_row(out + bh * width, ref.row(position), width);
  }
  return errors.finish();
}

// Prefill: every row of out [batch_heads, tokens, width].
template <class T, class Reference>
Accuracy check_prefill_heads(const T* out, std::int64_t batch_heads, std::int64_t tokens, std::int64_t width,
                             const Reference& reference) {
  ErrorAccumulator errors;
  if (tokens == 0) return errors.finish();  // an empty prefill has no rows (the scans reject it)
  for (std::int64_t bh = 0; bh < batch_heads; ++bh) {
    throw_if_stop_requested("checking the outputs against the fp64 reference");
    const MatrixD ref = reference(bh, tokens);
    for (std::int64_t t = 0; t < tokens; ++t) errors.add_row(out + (bh * tokens + t) * width, ref.row(t), width);
  }
  return errors.finish();
}

}  // namespace arch_bench
