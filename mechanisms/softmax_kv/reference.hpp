#pragma once
// fp64 reference of causal softmax attention for one head:
// Inputs must satisfy check_attention_shapes (mechanisms/common/attention_shapes.hpp).
// o_t = sum_{i<=t} softmax_i(q_t.k_i / sqrt(dk)) v_i.
#include <cstdint>
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// Output row for query t attending over keys 0..t (numerically stable: max subtracted first).
std::vector<double> softmax_attention_row(const MatrixD& q, const MatrixD& k, const MatrixD& v,
                                          std::int64_t t);

// All causal output rows [tokens, dv]. O(L^2 d): for tests and small L.
MatrixD softmax_attention_reference(const MatrixD& q, const MatrixD& k, const MatrixD& v);

}  // namespace arch_bench
