#pragma once
// fp64 reads of n stored (key, value) pairs that several mechanisms' capacity probes reduce to at
// their neutral setting (mechanisms/capacity.hpp): keys [n, d] unit-norm rows, values [n, dv]; row j
// of the result is what the read with key j returns.
#include <cstdint>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// The unnormalised additive memory H = sum_i v_i k_i^T read with k_j: y_j = sum_i (k_j . k_i) v_i.
// Exact for orthogonal keys up to n = d and a growing blur beyond (mamba's and mamba2's selective
// state at dt = 1 with no decay, B = C = k).
MatrixD additive_recall(const MatrixD& keys, const MatrixD& values);

// The exact softmax read over the last min(n, window) pairs with q = tau k_j, tau = 32 sqrt(d), so
// after the 1/sqrt(d) the self-match logit is 32 (softmax_kv's probe with window >= n, and
// sliding_window's).
MatrixD softmax_window_recall(const MatrixD& keys, const MatrixD& values, std::int64_t window);

}  // namespace arch_bench
