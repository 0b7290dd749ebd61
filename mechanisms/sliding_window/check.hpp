#pragma once
// The accuracy checks of sliding_window's prepared cells: the fp64 banded reference rows on the same
// seeded inputs, query head bh against the K/V of kv_source_head(bh, group).
#include <cstdint>
#include <vector>

#include "core/stop_request.hpp"
#include "mechanisms/common/check_rows.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/sliding_window/reference.hpp"

namespace arch_bench {

inline constexpr std::int64_t kSlidingWindowPrefillRowsChecked = 64;  // per head

// Decode at position `length` over inputs of length + 1 tokens; `out` is [batch_heads, dim]. Only the
// window's rows enter the reference: rows before it are not widened.
template <class Out>
Accuracy check_sliding_window_decode(const AttentionInputs& inputs, std::int64_t length, std::int64_t window,
                                     std::int64_t group, const Out* out) {
  ErrorAccumulator errors;
  for (std::int64_t bh = 0; bh < inputs.batch_heads; ++bh) {
    throw_if_stop_requested("checking the outputs against the fp64 reference");  // core/stop_request.hpp
    const MatrixD q = inputs.head_matrix(inputs.q, bh, length + 1);
    const MatrixD k = inputs.head_matrix(inputs.k, kv_source_head(bh, group), length + 1);
    const MatrixD v = inputs.head_matrix(inputs.v, kv_source_head(bh, group), length + 1);
    const std::vector<double> ref = sliding_window_attention_row(q, k, v, length, window);
    errors.add_row(out + bh * inputs.dim, ref.data(), inputs.dim);
  }
  return errors.finish();
}

// Banded prefill over all inputs.tokens tokens; `out` is [batch_heads, tokens, dim], checked on
// rows_to_check's spread of rows.
template <class Out>
Accuracy check_sliding_window_prefill(const AttentionInputs& inputs, std::int64_t window, std::int64_t group,
                                      const Out* out) {
  ErrorAccumulator errors;
  for (std::int64_t bh = 0; bh < inputs.batch_heads; ++bh) {
    throw_if_stop_requested("checking the outputs against the fp64 reference");  // core/stop_request.hpp
    const MatrixD q = inputs.head_matrix(inputs.q, bh, inputs.tokens);
    const MatrixD k = inputs.head_matrix(inputs.k, kv_source_head(bh, group), inputs.tokens);
    const MatrixD v = inputs.head_matrix(inputs.v, kv_source_head(bh, group), inputs.tokens);
    for (std::int64_t t : rows_to_check(inputs.tokens, kSlidingWindowPrefillRowsChecked)) {
      const std::vector<double> ref = sliding_window_attention_row(q, k, v, t, window);
      errors.add_row(out + (bh * inputs.tokens + t) * inputs.dim, ref.data(), inputs.dim);
    }
  }
  return errors.finish();
}

}  // namespace arch_bench
