#pragma once
// fp64 reference of sliding-window causal softmax attention, one output row:
//   o_t = sum_{i = max(0, t - W + 1)}^{t} softmax_i(q_t . k_i / sqrt(d)) v_i
// (the window holds the last W tokens, the current one included).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace window_softmax {

inline std::vector<double> reference_row(const arch_bench::MatrixD& q, const arch_bench::MatrixD& k,
                                         const arch_bench::MatrixD& v, std::int64_t t, std::int64_t window) {
  const std::int64_t first = std::max<std::int64_t>(0, t - window + 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.cols));
  std::vector<double> scores(static_cast<std::size_t>(t - first + 1));
  double max_score = -INFINITY;
  for (std::int64_t i = first; i <= t; ++i) {
    double dot = 0;
    for (std::int64_t c = 0; c < q.cols; ++c) dot += q(t, c) * k(i, c);
    scores[i - first] = dot * scale;
    max_score = std::max(max_score, scores[i - first]);
  }
  std::vector<double> out(static_cast<std::size_t>(v.cols), 0.0);
  double sum = 0;
  for (std::int64_t i = first; i <= t; ++i) {
    const double weight = std::exp(scores[i - first] - max_score);
    sum += weight;
    for (std::int64_t c = 0; c < v.cols; ++c) out[c] += weight * v(i, c);
  }
  for (double& value : out) value /= sum;
  return out;
}

}  // namespace window_softmax
