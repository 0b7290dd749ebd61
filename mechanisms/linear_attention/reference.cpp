#include "mechanisms/linear_attention/reference.hpp"

#include "mechanisms/common/attention_shapes.hpp"

namespace arch_bench {

LinearAttentionResult linear_attention_scan(const MatrixD& q, const MatrixD& k, const MatrixD& v,
                                            FeatureMap map) {
  check_attention_shapes(q, k, v);
  const MatrixD phi_q = positive_feature_map(q, map);
  const MatrixD phi_k = positive_feature_map(k, map);
  LinearAttentionResult result{MatrixD(q.rows, v.cols), MatrixD(q.cols, v.cols),
                               std::vector<double>(static_cast<std::size_t>(q.cols), 0.0)};
  MatrixD& state = result.state;
  std::vector<double>& z = result.normalizer;
  for (std::int64_t t = 0; t < q.rows; ++t) {
    // Update first: o_t reads the state that already contains token t (causal, inclusive).
    for (std::int64_t i = 0; i < q.cols; ++i) {
      z[i] += phi_k(t, i);
      for (std::int64_t j = 0; j < v.cols; ++j) state(i, j) += phi_k(t, i) * v(t, j);
    }
    double denominator = 0;
    for (std::int64_t i = 0; i < q.cols; ++i) denominator += phi_q(t, i) * z[i];
    for (std::int64_t j = 0; j < v.cols; ++j) {
      double numerator = 0;
      for (std::int64_t i = 0; i < q.cols; ++i) numerator += phi_q(t, i) * state(i, j);
      result.outputs(t, j) = numerator / denominator;
    }
  }
  return result;
}

}  // namespace arch_bench
