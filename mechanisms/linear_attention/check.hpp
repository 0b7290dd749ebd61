#pragma once
// The accuracy checks of linear attention's prepared cells against the fp64 recurrent reference,
// on outputs already on the host (the CUDA cells download theirs first).
#include <cstdint>
#include <vector>

#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/linear_attention/reference.hpp"

namespace arch_bench {

// Per head: the fp64 recurrent reference over the first `rows` tokens.
inline LinearAttentionResult linear_attention_reference_for_head(const AttentionInputs& inputs, std::int64_t bh,
                                                                 std::int64_t rows, FeatureMap map) {
  return linear_attention_scan(inputs.head_matrix(inputs.q, bh, rows), inputs.head_matrix(inputs.k, bh, rows),
                               inputs.head_matrix(inputs.v, bh, rows), map);
}

// Decode at position `length`: out [batch_heads, dv] against row `length` of the reference over
// length + 1 tokens.
inline Accuracy check_linear_attention_decode(const AttentionInputs& inputs, std::int64_t length, FeatureMap map,
                                              const std::vector<float>& out) {
  ErrorAccumulator errors;
  for (std::int64_t bh = 0; bh < inputs.batch_heads; ++bh) {
    const LinearAttentionResult ref = linear_attention_reference_for_head(inputs, bh, length + 1, map);
    errors.add_row(out.data() + bh * inputs.dim, ref.outputs.row(length), inputs.dim);
  }
  return errors.finish();
}

// Prefill: every row of out [batch_heads, tokens, dv].
inline Accuracy check_linear_attention_prefill(const AttentionInputs& inputs, FeatureMap map,
                                               const std::vector<float>& out) {
  ErrorAccumulator errors;
  if (inputs.tokens == 0) return errors.finish();  // an empty prefill has no rows (the scan rejects it)
  for (std::int64_t bh = 0; bh < inputs.batch_heads; ++bh) {
    const LinearAttentionResult ref = linear_attention_reference_for_head(inputs, bh, inputs.tokens, map);
    for (std::int64_t t = 0; t < inputs.tokens; ++t) {
      errors.add_row(out.data() + (bh * inputs.tokens + t) * inputs.dim, ref.outputs.row(t), inputs.dim);
    }
  }
  return errors.finish();
}

}  // namespace arch_bench
