#pragma once
// fp64 reference of multi-scale retention (RetNet, Sun et al. 2023) for one head, in its recurrent
// form: S_t = gamma S_{t-1} + k_t v_t^T, o_t = q_t^T S_t, from S_0 = 0.
#include <cstdint>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// The decay of head h of a layer: gamma_h = 1 - 2^(-5-h) (h = 0..heads-1), from 0.96875 (a horizon
// 1/(1-gamma) of 32 tokens) up to 1 - 2^(-4-heads).
double retnet_gamma(std::int64_t head);

struct RetNetResult {
  MatrixD outputs;  // [tokens, dv]
  MatrixD state;    // S after the last token, [dk, dv]
};

// Rejects (std::invalid_argument) empty sequences and mismatched q/k/v shapes.
RetNetResult retnet_scan(const MatrixD& q, const MatrixD& k, const MatrixD& v, double gamma);

// The capacity probe's math (mechanisms/capacity.hpp): writes every (keys[i], values[i]) into a fresh
// state with the given decay, then reads each key back, row i = S^T keys[i].
MatrixD retnet_recall(const MatrixD& keys, const MatrixD& values, double gamma);

}  // namespace arch_bench
