#include "mechanisms/common/recall_reads.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace arch_bench {

MatrixD additive_recall(const MatrixD& keys, const MatrixD& values) {
  const std::int64_t n = keys.rows, width = keys.cols, channels = values.cols;
  MatrixD h(channels, width);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t s = 0; s < width; ++s) h(c, s) += keys(i, s) * values(i, c);
    }
  }
  MatrixD out(n, channels);
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t s = 0; s < width; ++s) out(j, c) += keys(j, s) * h(c, s);
    }
  }
  return out;
}

MatrixD softmax_window_recall(const MatrixD& keys, const MatrixD& values, std::int64_t window) {
  // tau / sqrt(d) with tau = 32 sqrt(d): exactly 32.
  constexpr double kScale = 32.0;
  const std::int64_t n = keys.rows, d = keys.cols;
  const std::int64_t first = std::max<std::int64_t>(0, n - window);  // the oldest pair still held
  MatrixD out(n, values.cols);
  std::vector<double> logits(static_cast<std::size_t>(n - first));
  for (std::int64_t i = 0; i < n; ++i) {
    double top = -INFINITY;
    for (std::int64_t j = first; j < n; ++j) {
      double dot = 0;
      for (std::int64_t c = 0; c < d; ++c) dot += keys(i, c) * keys(j, c);
      logits[j - first] = kScale * dot;
      top = std::max(top, logits[j - first]);
    }
    double sum = 0;
    for (double& logit : logits) sum += (logit = std::exp(logit - top));
    for (std::int64_t j = first; j < n; ++j) {
      for (std::int64_t c = 0; c < values.cols; ++c) out(i, c) += logits[j - first] / sum * values(j, c);
    }
  }
  return out;
}

}  // namespace arch_bench
