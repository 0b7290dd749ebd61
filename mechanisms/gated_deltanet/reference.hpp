#pragma once
// fp64 reference of Gated DeltaNet (Yang, Kautz, Hatamizadeh 2024) for one head, in its sequential
// form, from S_0 = 0:
//   k_t <- k_t / |k_t|, q_t <- q_t / |q_t| / sqrt(dk)   (L2 norms with eps, as |x| = sqrt(x.x + 1e-6))
//   S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,  alpha_t = exp(g_t)
//   o_t = S_t^T q_t
// S is dk x dv (keys address rows). The delta rule replaces what the state returns for k_t by v_t
// (in proportion beta_t), where an additive rule would add v_t to it.
#include <cstdint>
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

inline constexpr double kGatedDeltaNetNormEps = 1e-6;

struct GatedDeltaNetResult {
  MatrixD outputs;  // [tokens, dv]
  MatrixD state;    // S after the last token, [dk, dv]
};

// q, k [tokens, dk] as given (normalised here), v [tokens, dv], g and beta [tokens]. Rejects
// (std::invalid_argument) empty sequences and mismatched shapes.
GatedDeltaNetResult gated_deltanet_scan(const MatrixD& q, const MatrixD& k, const MatrixD& v,
                                        const std::vector<double>& g, const std::vector<double>& beta);

// One write of the rule into `state` [dk, dv]: S = alpha (I - beta k k^T) S + beta k v^T, k used as given.
void gated_delta_rule_write(MatrixD& state, const double* k, const double* v, double alpha, double beta);

// The capacity probe's math (mechanisms/capacity.hpp): writes every (keys[i], values[i]) with
// alpha = 1 and beta = 1 into a fresh state, then reads each key back, row i = S^T keys[i].
MatrixD gated_deltanet_recall(const MatrixD& keys, const MatrixD& values);

}  // namespace arch_bench
