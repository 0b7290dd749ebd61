#pragma once
#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// The input contract every attention-style reference enforces: non-empty sequences, q and k of
// one shape, v with as many tokens. Throws std::invalid_argument naming what is wrong.
void check_attention_shapes(const MatrixD& q, const MatrixD& k, const MatrixD& v);

}  // namespace arch_bench
