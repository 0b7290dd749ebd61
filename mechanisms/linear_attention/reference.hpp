#pragma once
// fp64 reference of causal linear attention for one head (Katharopoulos et al. 2020), in its
// recurrent form: S_t = S_{t-1} + phi(k_t) v_t^T, z_t = z_{t-1} + phi(k_t),
// o_t = phi(q_t)^T S_t / (phi(q_t)^T z_t).
#include <vector>

#include "mechanisms/common/feature_maps.hpp"
#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

struct LinearAttentionResult {
  MatrixD outputs;                // [tokens, dv]
  MatrixD state;                  // S after the last token, [dk, dv]
  std::vector<double> normalizer; // z after the last token, [dk]
};

// Rejects (std::invalid_argument) empty sequences and mismatched q/k/v shapes.
LinearAttentionResult linear_attention_scan(const MatrixD& q, const MatrixD& k, const MatrixD& v,
                                            FeatureMap map = FeatureMap::elu_plus_one);

}  // namespace arch_bench
