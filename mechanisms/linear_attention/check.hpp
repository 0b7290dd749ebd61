#pragma once
// The accuracy checks of linear attention's prepared cells against the fp64 recurrent reference,
// on outputs already on the host (the CUDA cells download theirs first).
#include <cstdint>

#include "mechanisms/common/check_heads.hpp"
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
template <class T>
Accuracy check_linear_attention_decode(const AttentionInputs& inputs, std::int64_t length, FeatureMap map,
                                       const T* out) {
  return check_decode_heads(out, inputs.batch_heads, inputs.dim, length, [&](std::int64_t bh, std::int64_t rows) {
    return linear_attention_reference_for_head(inputs, bh, rows, map).outputs;
  });
}

// Prefill: every row of out [batch_heads, tokens, dv].
template <class T>
Accuracy check_linear_attention_prefill(const AttentionInputs& inputs, FeatureMap map, const T* out) {
  return check_prefill_heads(out, inputs.batch_heads, inputs.tokens, inputs.dim,
                             [&](std::int64_t bh, std::int64_t rows) {
                               return linear_attention_reference_for_head(inputs, bh, rows, map).outputs;
                             });
}

}  // namespace arch_bench
