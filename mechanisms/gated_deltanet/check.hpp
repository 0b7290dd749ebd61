#pragma once
// The accuracy checks of gated_deltanet's prepared cells against the fp64 sequential reference, on
// outputs already on the host (the CUDA cells download theirs first).
#include <cstdint>

#include "mechanisms/common/check_heads.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#include "mechanisms/gated_deltanet/reference.hpp"

namespace arch_bench {

// Per (batch, head) row bh: the fp64 sequential reference over the first `rows` tokens.
inline GatedDeltaNetResult gated_deltanet_reference_for_head(const AttentionInputs& inputs,
                                                             const GatedDeltaNetGates& gates, std::int64_t bh,
                                                             std::int64_t rows) {
  return gated_deltanet_scan(inputs.head_matrix(inputs.q, bh, rows), inputs.head_matrix(inputs.k, bh, rows),
                             inputs.head_matrix(inputs.v, bh, rows), gates.head_vector(gates.g, bh, rows),
                             gates.head_vector(gates.beta, bh, rows));
}

// Decode at position `length`: out [batch_heads, dv] against row `length` of the reference over
// length + 1 tokens.
template <class T>
Accuracy check_gated_deltanet_decode(const AttentionInputs& inputs, const GatedDeltaNetGates& gates,
                                     std::int64_t length, const T* out) {
  return check_decode_heads(out, inputs.batch_heads, inputs.dim, length, [&](std::int64_t bh, std::int64_t rows) {
    return gated_deltanet_reference_for_head(inputs, gates, bh, rows).outputs;
  });
}

// Prefill: every row of out [batch_heads, tokens, dv].
template <class T>
Accuracy check_gated_deltanet_prefill(const AttentionInputs& inputs, const GatedDeltaNetGates& gates, const T* out) {
  return check_prefill_heads(out, inputs.batch_heads, inputs.tokens, inputs.dim,
                             [&](std::int64_t bh, std::int64_t rows) {
                               return gated_deltanet_reference_for_head(inputs, gates, bh, rows).outputs;
                             });
}

}  // namespace arch_bench
