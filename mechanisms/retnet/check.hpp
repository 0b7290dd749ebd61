#pragma once
// The accuracy checks of retnet's prepared cells against the fp64 recurrent reference, on outputs
// already on the host (the CUDA cells download theirs first).
#include <cstdint>
#include <vector>

#include "core/checked_size.hpp"
#include "mechanisms/common/check_heads.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/retnet/reference.hpp"

namespace arch_bench {

// gamma_h of every head of the cell (retnet_gamma).
inline std::vector<double> retnet_gammas(std::int64_t heads) {
  std::vector<double> gamma(checked_count(heads));
  for (std::int64_t h = 0; h < heads; ++h) gamma[h] = retnet_gamma(h);
  return gamma;
}

// Per (batch, head) row bh: the fp64 recurrent reference over the first `rows` tokens.
inline RetNetResult retnet_reference_for_head(const AttentionInputs& inputs, std::int64_t heads, std::int64_t bh,
                                              std::int64_t rows) {
  return retnet_scan(inputs.head_matrix(inputs.q, bh, rows), inputs.head_matrix(inputs.k, bh, rows),
                     inputs.head_matrix(inputs.v, bh, rows), retnet_gamma(bh % heads));
}

// Decode at position `length`: out [batch_heads, dv] against row `length` of the reference over
// length + 1 tokens.
template <class T>
Accuracy check_retnet_decode(const AttentionInputs& inputs, std::int64_t heads, std::int64_t length, const T* out) {
  return check_decode_heads(out, inputs.batch_heads, inputs.dim, length, [&](std::int64_t bh, std::int64_t rows) {
    return retnet_reference_for_head(inputs, heads, bh, rows).outputs;
  });
}

// Prefill: every row of out [batch_heads, tokens, dv].
template <class T>
Accuracy check_retnet_prefill(const AttentionInputs& inputs, std::int64_t heads, const T* out) {
  return check_prefill_heads(out, inputs.batch_heads, inputs.tokens, inputs.dim,
                             [&](std::int64_t bh, std::int64_t rows) {
                               return retnet_reference_for_head(inputs, heads, bh, rows).outputs;
                             });
}

}  // namespace arch_bench
