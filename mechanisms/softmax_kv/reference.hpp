#pragma once
// fp64 reference of causal softmax attention for one head, optionally over a sliding window:
// Inputs must satisfy check_attention_shapes (mechanisms/common/attention_shapes.hpp).
// o_t = sum_{first(t) <= i <= t} softmax_i(q_t.k_i / sqrt(dk)) v_i, first(t) = 0 without a window
// and max(0, t - W + 1) with window W (sliding_window's reference is this one).
#include <cstdint>
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// Output row for query t attending over keys first(t)..t (numerically stable: max subtracted
// first). window 0: every key up to t; otherwise W >= 1 keys at most.
std::vector<double> softmax_attention_row(const MatrixD& q, const MatrixD& k, const MatrixD& v, std::int64_t t,
                                          std::int64_t window = 0);

// All causal output rows [tokens, dv] (window as above). O(L min(L, W) d): for tests and small L.
MatrixD softmax_attention_reference(const MatrixD& q, const MatrixD& k, const MatrixD& v, std::int64_t window = 0);

}  // namespace arch_bench
