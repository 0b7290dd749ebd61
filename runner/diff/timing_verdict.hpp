#pragma once
// The timing verdict of one pair of rows, from their raw samples.
#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "runner/diff/verdicts.hpp"

namespace arch_bench {

struct TimingSettings {
  double alpha = 0.01;       // significance level of the two-sided Mann-Whitney U test
  double min_effect = 0.05;  // smallest |new median / old median - 1| that counts as a change
  std::size_t min_samples = 8;  // below this on either side the normal approximation is not trusted
};

struct TimingComparison {
  Verdict verdict = Verdict::unsure;
  std::string reason;  // one short clause: why this verdict
  std::size_t old_samples = 0, new_samples = 0;
  std::optional<double> old_median_ms, new_median_ms;
  std::optional<double> change;   // new median / old median - 1
  std::optional<double> p_value;  // absent when the test was not run
};

// SLOWER / FASTER: p < alpha and |change| >= min_effect, the ranks agreeing with the medians on the
// direction. SAME: |change| < min_effect (significant or not: a real but tiny shift is not worth a
// red CI job). UNSURE: fewer than min_samples on a side, a large change that is not significant,
// or ranks and medians pointing opposite ways (a bimodal sample).
TimingComparison judge_timing(std::span<const double> old_samples_ms, std::span<const double> new_samples_ms,
                              const TimingSettings& settings);

}  // namespace arch_bench
