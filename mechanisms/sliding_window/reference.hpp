#pragma once
// fp64 reference of sliding-window causal softmax attention for one head (shapes as
// check_attention_shapes): query t attends to keys t - W + 1 .. t (those that exist),
// o_t = sum_{max(0, t-W+1) <= i <= t} softmax_i(q_t.k_i / sqrt(dk)) v_i.
#include <cstdint>
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// Output row for query t over the keys of its window (numerically stable: max subtracted first).
std::vector<double> sliding_window_attention_row(const MatrixD& q, const MatrixD& k, const MatrixD& v, std::int64_t t,
                                                 std::int64_t window);

// All rows [tokens, dv]. O(L W d): for tests and small L.
MatrixD sliding_window_attention_reference(const MatrixD& q, const MatrixD& k, const MatrixD& v, std::int64_t window);

}  // namespace arch_bench
