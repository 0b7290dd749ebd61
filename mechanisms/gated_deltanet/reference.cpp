#include "mechanisms/gated_deltanet/reference.hpp"

#include <cmath>
#include <stdexcept>

#include "mechanisms/common/attention_shapes.hpp"

namespace arch_bench {

namespace {
std::vector<double> normalised(const double* x, std::int64_t n, double scale) {
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
  const double factor = scale / std::sqrt(sum + kGatedDeltaNetNormEps);
  std::vector<double> out(x, x + n);
  for (double& value : out) value *= factor;
  return out;
}
}  // namespace

void gated_delta_rule_write(MatrixD& state, const double* k, const double* v, double alpha, double beta) {
  // S^T k before the write: what the state returns for k now.
  std::vector<double> recalled(static_cast<std::size_t>(state.cols), 0.0);
  for (std::int64_t i = 0; i < state.rows; ++i) {
    for (std::int64_t j = 0; j < state.cols; ++j) recalled[j] += k[i] * state(i, j);
  }
  // alpha (I - beta k k^T) S + beta k v^T = alpha S + k (beta (v - alpha S^T k))^T
  for (std::int64_t i = 0; i < state.rows; ++i) {
    for (std::int64_t j = 0; j < state.cols; ++j) {
      state(i, j) = alpha * state(i, j) + k[i] * beta * (v[j] - alpha * recalled[j]);
    }
  }
}

GatedDeltaNetResult gated_deltanet_scan(const MatrixD& q, const MatrixD& k, const MatrixD& v,
                                        const std::vector<double>& g, const std::vector<double>& beta) {
  check_attention_shapes(q, k, v);
  if (static_cast<std::int64_t>(g.size()) != q.rows || static_cast<std::int64_t>(beta.size()) != q.rows) {
    throw std::invalid_argument("gated_deltanet_scan: g and beta need one value per token");
  }
  const std::int64_t dk = q.cols, dv = v.cols;
  GatedDeltaNetResult result{MatrixD(q.rows, dv), MatrixD(dk, dv)};
  const double query_scale = 1.0 / std::sqrt(static_cast<double>(dk));
  for (std::int64_t t = 0; t < q.rows; ++t) {
    const std::vector<double> key = normalised(k.row(t), dk, 1.0);
    const std::vector<double> query = normalised(q.row(t), dk, query_scale);
    gated_delta_rule_write(result.state, key.data(), v.row(t), std::exp(g[t]), beta[t]);
    for (std::int64_t i = 0; i < dk; ++i) {
      for (std::int64_t j = 0; j < dv; ++j) result.outputs(t, j) += query[i] * result.state(i, j);
    }
  }
  return result;
}

MatrixD gated_deltanet_recall(const MatrixD& keys, const MatrixD& values) {
  MatrixD state(keys.cols, values.cols), read(keys.rows, values.cols);
  for (std::int64_t t = 0; t < keys.rows; ++t) gated_delta_rule_write(state, keys.row(t), values.row(t), 1.0, 1.0);
  for (std::int64_t t = 0; t < keys.rows; ++t) {
    for (std::int64_t i = 0; i < keys.cols; ++i) {
      for (std::int64_t j = 0; j < values.cols; ++j) read(t, j) += keys(t, i) * state(i, j);
    }
  }
  return read;
}

}  // namespace arch_bench
