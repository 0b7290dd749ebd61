#include "runner/measure/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace arch_bench {

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("quantile of an empty sample set");
  // numpy "linear": position h = (n - 1) q, then interpolate between the order statistics
  // either side of h.
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto below = static_cast<std::size_t>(std::floor(h));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = h - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

SampleStats summarize(std::span<const double> samples_ms) {
  if (samples_ms.empty()) {
    throw std::invalid_argument("summarize: no samples (a cell needs at least one timed repeat)");
  }
  std::vector<double> sorted(samples_ms.begin(), samples_ms.end());
  std::sort(sorted.begin(), sorted.end());
  const auto n = static_cast<double>(sorted.size());

  SampleStats stats;
  double sum = 0;
  for (double x : sorted) sum += x;
  stats.mean = sum / n;
  // Two passes (mean first, then squared deviations) rather than sum-of-squares: samples are
  // nearly equal, and E[x^2] - E[x]^2 would cancel catastrophically.
  if (sorted.size() >= 2) {
    double squares = 0;
    for (double x : sorted) squares += (x - stats.mean) * (x - stats.mean);
    stats.stdev = std::sqrt(squares / (n - 1));
  }
  stats.rel_stdev = stats.mean != 0 ? stats.stdev / stats.mean : 0;
  stats.median = quantile_sorted(sorted, 0.5);
  stats.p05 = quantile_sorted(sorted, 0.05);
  stats.p95 = quantile_sorted(sorted, 0.95);
  stats.min = sorted.front();
  stats.max = sorted.back();
  return stats;
}

}  // namespace arch_bench
