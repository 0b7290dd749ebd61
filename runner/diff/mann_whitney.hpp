#pragma once
// The Mann-Whitney U (Wilcoxon rank-sum) test, two-sided. `arch-bench diff` uses it on raw
// timing samples because step times are skewed and heavy-tailed (preemption, page faults): a rank
// test asks "does one run tend to take longer?" without assuming normal noise, and one outlier
// moves a rank by one, not the mean by a lot.
#include <cstddef>
#include <span>

namespace arch_bench {

struct MannWhitneyResult {
  double u_statistic = 0;  // U of the first sample: pairs (x_i, y_j) with x_i > y_j, ties counted 1/2
  double mean_u = 0;       // n_x n_y / 2, the expected U when neither sample tends to be larger
  double p_value = 1;      // two-sided
  std::size_t n_x = 0, n_y = 0;

  // True when x tends to be larger than y (U above its null mean).
  bool x_tends_larger() const { return u_statistic > mean_u; }
};

// Normal approximation with the tie correction of the variance and a continuity correction of
// 0.5, the same as scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic",
// use_continuity=True). Good for n >= 8 per sample; callers do not judge smaller samples.
// When every value is tied the variance is 0 and p is 1 (nothing separates the samples).
// Throws std::invalid_argument when either sample is empty.
MannWhitneyResult mann_whitney_u(std::span<const double> x, std::span<const double> y);

}  // namespace arch_bench
