#include "mechanisms/softmax_kv/capacity.hpp"

#include <algorithm>
#include <cmath>

namespace arch_bench {

namespace {

// Query q = tau k_i with tau = 32 sqrt(d): after the mechanism's own 1/sqrt(d) the self-match logit is
// 32 and a random unit key's is 32 k_i.k_j, so the self-match dominates the softmax by e^(32 (1 -
// k_i.k_j)). The cache itself is exact: any loss here is the softmax's blur, not the state's.
constexpr double kTauOverSqrtD = 32.0;

class SoftmaxCapacity final : public CapacityProbe {
 public:
  MatrixD recall(const MatrixD& keys, const MatrixD& values) const override {
    const std::int64_t n = keys.rows, d = keys.cols;
    const double tau = kTauOverSqrtD * std::sqrt(static_cast<double>(d));
    const double scale = tau / std::sqrt(static_cast<double>(d));
    MatrixD out(n, values.cols);
    std::vector<double> logits(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      double top = -INFINITY;
      for (std::int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (std::int64_t c = 0; c < d; ++c) dot += keys(i, c) * keys(j, c);
        logits[j] = scale * dot;
        top = std::max(top, logits[j]);
      }
      double sum = 0;
      for (double& logit : logits) sum += (logit = std::exp(logit - top));
      for (std::int64_t j = 0; j < n; ++j) {
        for (std::int64_t c = 0; c < values.cols; ++c) out(i, c) += logits[j] / sum * values(j, c);
      }
    }
    return out;
  }
  std::string setting() const override {
    return "exact K/V cache read with q = tau k, tau = 32 sqrt(head_dim) (self-match logit 32)";
  }
};

}  // namespace

const CapacityProbe& softmax_kv_capacity() {
  static const SoftmaxCapacity probe;
  return probe;
}

}  // namespace arch_bench
