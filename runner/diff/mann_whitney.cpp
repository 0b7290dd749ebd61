#include "runner/diff/mann_whitney.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

namespace arch_bench {

MannWhitneyResult mann_whitney_u(std::span<const double> x, std::span<const double> y) {
  if (x.empty() || y.empty()) throw std::invalid_argument("mann_whitney_u: both samples need at least one value");
  const std::size_t n_x = x.size();
  const std::size_t n_y = y.size();
  const std::size_t n = n_x + n_y;

  // (value, from x?) sorted by value; tied values share the mean of the ranks they span.
  std::vector<std::pair<double, bool>> pooled;
  pooled.reserve(n);
  for (double value : x) pooled.emplace_back(value, true);
  for (double value : y) pooled.emplace_back(value, false);
  std::sort(pooled.begin(), pooled.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  double rank_sum_x = 0;
  double tie_term = 0;  // sum over tie groups of t^3 - t
  for (std::size_t start = 0; start < n;) {
    std::size_t end = start + 1;
    while (end < n && pooled[end].first == pooled[start].first) ++end;
    const double t = static_cast<double>(end - start);
    const double mean_rank = 0.5 * static_cast<double>(start + 1 + end);  // ranks start+1 .. end
    for (std::size_t i = start; i < end; ++i) {
      if (pooled[i].second) rank_sum_x += mean_rank;
    }
    tie_term += t * t * t - t;
    start = end;
  }

  const double nx = static_cast<double>(n_x);
  const double ny = static_cast<double>(n_y);
  const double nn = static_cast<double>(n);
  MannWhitneyResult result;
  result.n_x = n_x;
  result.n_y = n_y;
  result.u_statistic = rank_sum_x - nx * (nx + 1) / 2;
  result.mean_u = nx * ny / 2;
  const double variance = nx * ny / 12 * ((nn + 1) - tie_term / (nn * (nn - 1)));
  if (!(variance > 0)) {
    result.p_value = 1;
    return result;
  }
  // Two-sided: the larger of U_x and U_y = n_x n_y - U_x, shifted by 0.5 towards the mean.
  const double u_max = std::max(result.u_statistic, nx * ny - result.u_statistic);
  const double z = (u_max - result.mean_u - 0.5) / std::sqrt(variance);
  result.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));  // 2 * P(Z > z)
  return result;
}

}  // namespace arch_bench
