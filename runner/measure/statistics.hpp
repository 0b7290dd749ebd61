#pragma once
// Summary statistics of one cell's timed samples. The raw samples are always kept next to these;
// the summary is what tables and decisions read.
#include <span>

#include "runner/pipeline/run_result.hpp"

namespace arch_bench {

// mean, median, p05, p95, sample stdev (n-1), rel_stdev = stdev / mean, min, max.
// Percentiles interpolate linearly between order statistics (numpy's default "linear" method), so
// numbers agree with what an analyst recomputes from the raw samples in the report.
// Throws std::invalid_argument on an empty span.
SampleStats summarize(std::span<const double> samples_ms);

// The q-quantile (0 <= q <= 1) of already sorted values, numpy "linear" method.
double quantile_sorted(std::span<const double> sorted, double q);

}  // namespace arch_bench
