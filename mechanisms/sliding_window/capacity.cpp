#include "mechanisms/sliding_window/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

namespace arch_bench {

namespace {

// softmax_kv's probe setting (mechanisms/softmax_kv/capacity.cpp): q = tau k_i, tau = 32 sqrt(d), so
// the self-match logit is 32. Pairs older than the window are gone: their keys are answered by the
// softmax over the window's keys alone.
constexpr double kTauOverSqrtD = 32.0;

class SlidingWindowCapacity final : public CapacityProbe {
 public:
  explicit SlidingWindowCapacity(std::int64_t window) : window_(window) {}

  MatrixD recall(const MatrixD& keys, const MatrixD& values) const override {
    const std::int64_t n = keys.rows, d = keys.cols;
    const std::int64_t first = std::max<std::int64_t>(0, n - window_);  // the oldest pair still held
    const double scale = kTauOverSqrtD;  // tau / sqrt(d) with tau = 32 sqrt(d)
    MatrixD out(n, values.cols);
    std::vector<double> logits(static_cast<std::size_t>(n - first));
    for (std::int64_t i = 0; i < n; ++i) {
      double top = -INFINITY;
      for (std::int64_t j = first; j < n; ++j) {
        double dot = 0;
        for (std::int64_t c = 0; c < d; ++c) dot += keys(i, c) * keys(j, c);
        logits[j - first] = scale * dot;
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

  std::string setting() const override {
    return fmt::format("exact softmax read of the last W = {} pairs with q = tau k, tau = 32 sqrt(head_dim)", window_);
  }

 private:
  std::int64_t window_;
};

}  // namespace

const CapacityProbe& sliding_window_capacity(std::int64_t window) {
  // One probe per window, kept for the life of the process (the landscape holds the pointer).
  static std::mutex mutex;
  static std::map<std::int64_t, std::unique_ptr<SlidingWindowCapacity>> probes;
  const std::lock_guard lock(mutex);
  auto& probe = probes[window];
  if (!probe) probe = std::make_unique<SlidingWindowCapacity>(window);
  return *probe;
}

}  // namespace arch_bench
