#pragma once
// The accuracy checks of softmax_kv's and sliding_window's prepared cells, shared by the CPU cells
// (mechanism.cpp of each) and the CUDA cells (cuda_cells.cpp, on outputs downloaded to the host): the
// same fp64 reference rows on the same seeded inputs, whichever backend produced the output; the heads
// on the run's OpenMP team (check_heads_in_parallel). A
// window W > 0 restricts query t to keys t - W + 1..t (sliding_window); 0 is causal attention.
#include <cstdint>
#include <vector>

#include "mechanisms/common/check_heads.hpp"
#include "mechanisms/common/check_rows.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/softmax_kv/reference.hpp"

namespace arch_bench {

inline constexpr std::int64_t kSoftmaxPrefillRowsChecked = 64;  // per head

// Decode at position `length` over inputs of length + 1 tokens; `out` is [batch_heads, dim]. Query
// head bh reads the K/V rows of kv_source_head(bh, group) (grouped_kv.hpp).
template <class Out>
Accuracy check_softmax_decode(const AttentionInputs& inputs, std::int64_t length, const Out* out,
                              std::int64_t group = 1, std::int64_t window = 0) {
  return check_heads_in_parallel(inputs.batch_heads, [&](std::int64_t bh, ErrorAccumulator& errors) {
    const MatrixD q = inputs.head_matrix(inputs.q, bh, length + 1);
    const MatrixD k = inputs.head_matrix(inputs.k, kv_source_head(bh, group), length + 1);
    const MatrixD v = inputs.head_matrix(inputs.v, kv_source_head(bh, group), length + 1);
    const std::vector<double> ref = softmax_attention_row(q, k, v, length, window);
    errors.add_row(out + bh * inputs.dim, ref.data(), inputs.dim);
  });
}

// Causal (banded with a window) prefill over all inputs.tokens tokens; `out` is [batch_heads,
// tokens, dim]. Long prefills are checked on rows_to_check's spread of rows (the reference row
// costs O(t d)).
template <class Out>
Accuracy check_softmax_prefill(const AttentionInputs& inputs, const Out* out, std::int64_t group = 1,
                               std::int64_t window = 0) {
  const std::vector<std::int64_t> rows = rows_to_check(inputs.tokens, kSoftmaxPrefillRowsChecked);
  return check_heads_in_parallel(inputs.batch_heads, [&](std::int64_t bh, ErrorAccumulator& errors) {
    const MatrixD q = inputs.head_matrix(inputs.q, bh, inputs.tokens);
    const MatrixD k = inputs.head_matrix(inputs.k, kv_source_head(bh, group), inputs.tokens);
    const MatrixD v = inputs.head_matrix(inputs.v, kv_source_head(bh, group), inputs.tokens);
    for (std::int64_t t : rows) {
      const std::vector<double> ref = softmax_attention_row(q, k, v, t, window);
      errors.add_row(out + (bh * inputs.tokens + t) * inputs.dim, ref.data(), inputs.dim);
    }
  });
}

}  // namespace arch_bench
