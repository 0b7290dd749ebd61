#include "mechanisms/performer/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "mechanisms/common/recall_probe.hpp"

namespace arch_bench {

namespace {

constexpr std::uint64_t kProjectionSeed = 0;

// The Performer estimates softmax(q.k / sqrt(d)) with q = k: its recall is at best the softmax's
// at tau = 1 (a blur over every stored value), minus the estimator's variance at m features.
// Weights use the stabilised features: phi(x) = exp(log_scale(x)) f(x); the query's scale cancels in
// the normalisation, the keys' scales are kept relative to their largest.
class PerformerCapacity final : public CapacityProbe {
 public:
  PerformerCapacity(PerformerFeatures kind, std::int64_t features) : kind_(kind), features_(features) {}
  MatrixD recall(const MatrixD& keys, const MatrixD& values) const override {
    const std::int64_t n = keys.rows, d = keys.cols, dv = values.cols;
    const MatrixD projection = performer_projection(kind_, features_, d, kProjectionSeed);
    std::vector<PerformerTokenFeatures> phi;
    double top = -INFINITY;
    for (std::int64_t i = 0; i < n; ++i) {
      phi.push_back(performer_token_features(keys.row(i), d, projection, kind_, features_));
      top = std::max(top, phi.back().log_scale);
    }
    MatrixD out(n, dv);
    for (std::int64_t j = 0; j < n; ++j) {
      double denominator = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        double dot = 0;
        for (std::size_t f = 0; f < phi[j].features.size(); ++f) dot += phi[j].features[f] * phi[i].features[f];
        const double weight = std::exp(phi[i].log_scale - top) * dot;
        denominator += weight;
        for (std::int64_t c = 0; c < dv; ++c) out(j, c) += weight * values(i, c);
      }
      for (std::int64_t c = 0; c < dv; ++c) out(j, c) /= denominator;
    }
    return out;
  }
  std::string setting() const override {
    return performer_features_name(kind_) + " with m = " + std::to_string(features_) + " features, q = k";
  }

 private:
  PerformerFeatures kind_;
  std::int64_t features_;
};

}  // namespace

const CapacityProbe& performer_capacity(PerformerFeatures kind, std::int64_t features) {
  return probe_per_key(std::pair{static_cast<int>(kind), features}, [](const std::pair<int, std::int64_t>& key) {
    return std::make_unique<PerformerCapacity>(static_cast<PerformerFeatures>(key.first), key.second);
  });
}

}  // namespace arch_bench
