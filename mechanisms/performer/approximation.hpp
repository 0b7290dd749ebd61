#pragma once
// How far Performer's outputs are from exact causal softmax attention on the same inputs: the
// approximation error, as opposed to check()'s kernel error against the Performer reference.
// It is what m buys: the random-feature estimate of exp(q.k / sqrt(dk)) sharpens as m grows.
#include <cstdint>

#include "mechanisms/common/inputs.hpp"

namespace arch_bench {

struct SoftmaxApproximationError {
  // ||out - exact||_2 / ||exact||_2 over all compared rows together (Frobenius norms), so rows
  // with tiny outputs do not dominate; infinite when an output is not finite.
  double rel_l2 = 0;
  double max_abs = 0;  // max |out - exact| over every compared element
  std::int64_t rows = 0;
};

// Decode: `out` [batch_heads, dv] holds each head's row for the last token of `inputs`
// (position inputs.tokens - 1), compared with softmax_attention_row at that position.
template <class T>
SoftmaxApproximationError approximation_vs_softmax_decode(const AttentionInputs& inputs, const T* out);

// Prefill: `out` [batch_heads, tokens, dv]; compares rows_to_check(tokens, max_rows) of each head
// (exact rows cost O(t d) each).
template <class T>
SoftmaxApproximationError approximation_vs_softmax_prefill(const AttentionInputs& inputs, const T* out,
                                                           std::int64_t max_rows);

}  // namespace arch_bench
