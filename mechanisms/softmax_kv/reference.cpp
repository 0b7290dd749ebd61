#include "mechanisms/softmax_kv/reference.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mechanisms/common/attention_shapes.hpp"

namespace arch_bench {

std::vector<double> softmax_attention_row(const MatrixD& q, const MatrixD& k, const MatrixD& v, std::int64_t t,
                                          std::int64_t window) {
  check_attention_shapes(q, k, v);
  if (t < 0 || t >= q.rows) throw std::out_of_range("query position outside the sequence");
  if (window < 0) throw std::invalid_argument("sliding window must hold at least one token (0: no window)");
  const std::int64_t first = window == 0 ? 0 : std::max<std::int64_t>(0, t - window + 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.cols));
  std::vector<double> scores(static_cast<std::size_t>(t + 1 - first));
  for (std::int64_t i = first; i <= t; ++i) {
    double dot = 0;
    for (std::int64_t c = 0; c < q.cols; ++c) dot += q(t, c) * k(i, c);
    scores[i - first] = dot * scale;
  }
  const double max_score = *std::max_element(scores.begin(), scores.end());
  double denominator = 0;
  std::vector<double> out(static_cast<std::size_t>(v.cols), 0.0);
  for (std::int64_t i = first; i <= t; ++i) {
    const double weight = std::exp(scores[i - first] - max_score);
    denominator += weight;
    for (std::int64_t c = 0; c < v.cols; ++c) out[c] += weight * v(i, c);
  }
  for (double& x : out) x /= denominator;
  return out;
}

MatrixD softmax_attention_reference(const MatrixD& q, const MatrixD& k, const MatrixD& v, std::int64_t window) {
  check_attention_shapes(q, k, v);
  MatrixD out(q.rows, v.cols);
  for (std::int64_t t = 0; t < q.rows; ++t) {
    const std::vector<double> row = softmax_attention_row(q, k, v, t, window);
    std::copy(row.begin(), row.end(), out.row(t));
  }
  return out;
}

}  // namespace arch_bench
