#include "runner/diff/timing_verdict.hpp"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "runner/diff/mann_whitney.hpp"
#include "runner/measure/statistics.hpp"

namespace arch_bench {

TimingComparison judge_timing(std::span<const double> old_samples_ms, std::span<const double> new_samples_ms,
                              const TimingSettings& settings) {
  TimingComparison result;
  result.old_samples = old_samples_ms.size();
  result.new_samples = new_samples_ms.size();
  if (!old_samples_ms.empty()) result.old_median_ms = summarize(old_samples_ms).median;
  if (!new_samples_ms.empty()) result.new_median_ms = summarize(new_samples_ms).median;
  if (result.old_median_ms && result.new_median_ms && *result.old_median_ms > 0) {
    result.change = *result.new_median_ms / *result.old_median_ms - 1;
  }

  if (result.old_samples < settings.min_samples || result.new_samples < settings.min_samples) {
    result.verdict = Verdict::unsure;
    result.reason = fmt::format("too few samples ({} old, {} new; need {} each)", result.old_samples,
                                result.new_samples, settings.min_samples);
    return result;
  }
  if (!result.change) {
    result.verdict = Verdict::unsure;
    result.reason = "old median is 0 ms; no ratio";
    return result;
  }
  const MannWhitneyResult test = mann_whitney_u(old_samples_ms, new_samples_ms);
  result.p_value = test.p_value;
  const double change = *result.change;
  const bool significant = test.p_value < settings.alpha;
  const bool large = std::abs(change) >= settings.min_effect;
  const std::string effect = fmt::format("{:+.1f}%", 100 * change);
  const std::string threshold = fmt::format("{:.1f}%", 100 * settings.min_effect);

  if (!large) {
    result.verdict = Verdict::same;
    result.reason = significant ? fmt::format("significant but {} is below the {} minimum effect", effect, threshold)
                                : fmt::format("{} is below the {} minimum effect", effect, threshold);
    return result;
  }
  if (!significant) {
    result.verdict = Verdict::unsure;
    result.reason = fmt::format("{} but p = {:.3g} >= alpha {}; rerun with more repeats", effect, test.p_value,
                                settings.alpha);
    return result;
  }
  // The old sample tending larger means the new run is faster; the medians must say the same.
  const bool ranks_say_faster = test.x_tends_larger();
  if (ranks_say_faster != (change < 0)) {
    result.verdict = Verdict::unsure;
    result.reason = fmt::format("medians say {} but ranks say the other way; look at the samples", effect);
    return result;
  }
  result.verdict = change > 0 ? Verdict::slower : Verdict::faster;
  result.reason = fmt::format("{} (p = {:.3g} < {})", effect, test.p_value, settings.alpha);
  return result;
}

}  // namespace arch_bench
