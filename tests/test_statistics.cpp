// summarize(): percentiles are checked against numpy's default ("linear") method, computed by hand
// as h = (n - 1) q, x[floor h] + frac(h) (x[floor h + 1] - x[floor h]).
#include <cmath>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "runner/measure/statistics.hpp"

namespace arch_bench {
namespace {

TEST(Statistics, OddCountUnsorted) {
  const std::vector<double> samples{5, 1, 3, 2, 4};
  const SampleStats s = summarize(samples);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.p05, 1.2);  // h = 0.2
  EXPECT_DOUBLE_EQ(s.p95, 4.8);  // h = 3.8
  EXPECT_DOUBLE_EQ(s.stdev, 1.5811388300841898);  // sqrt(10 / 4)
  EXPECT_DOUBLE_EQ(s.rel_stdev, 0.5270462766947299);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
}

TEST(Statistics, EvenCountMedianIsMidpoint) {
  const std::vector<double> samples{4, 1, 3, 2};
  const SampleStats s = summarize(samples);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p05, 1.15);  // h = 0.15
  EXPECT_DOUBLE_EQ(s.p95, 3.85);  // h = 2.85
  EXPECT_DOUBLE_EQ(s.stdev, 1.2909944487358056);
}

TEST(Statistics, PercentilesInterpolateUnevenGaps) {
  // Sorted: 0 1 3 7 10 100. A tail sample drags p95 but not the median.
  const std::vector<double> samples{10, 0, 1, 100, 3, 7};
  const SampleStats s = summarize(samples);
  EXPECT_DOUBLE_EQ(s.p05, 0.25);  // h = 0.25, between 0 and 1
  EXPECT_DOUBLE_EQ(s.median, 5.0);  // h = 2.5, between 3 and 7
  EXPECT_DOUBLE_EQ(s.p95, 77.5);  // h = 4.75, between 10 and 100
  EXPECT_DOUBLE_EQ(s.mean, 121.0 / 6.0);
  EXPECT_NEAR(s.stdev, 39.29079620810282, 1e-12);
  EXPECT_NEAR(s.rel_stdev, 1.9483039442034455, 1e-12);
}

TEST(Statistics, SingleSampleHasZeroSpread) {
  const std::vector<double> samples{2.5};
  const SampleStats s = summarize(samples);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p05, 2.5);
  EXPECT_DOUBLE_EQ(s.p95, 2.5);
  EXPECT_EQ(s.stdev, 0.0);
  EXPECT_EQ(s.rel_stdev, 0.0);
}

TEST(Statistics, RelStdevIsZeroWhenMeanIsZero) {
  const std::vector<double> samples{-1, 1};
  const SampleStats s = summarize(samples);
  EXPECT_DOUBLE_EQ(s.mean, 0.0);
  EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(2.0));
  EXPECT_EQ(s.rel_stdev, 0.0);
}

TEST(Statistics, StdevSurvivesLargeOffset) {
  // Timings in ns since an epoch look like this; sum-of-squares would lose the spread entirely.
  const std::vector<double> samples{1e9 + 1, 1e9 + 2, 1e9 + 3};
  EXPECT_DOUBLE_EQ(summarize(samples).stdev, 1.0);
}

TEST(Statistics, EmptyThrows) {
  const std::vector<double> none;
  EXPECT_THROW(summarize(none), std::invalid_argument);
  EXPECT_THROW(quantile_sorted(none, 0.5), std::invalid_argument);
}

TEST(Statistics, QuantileEndpointsAreMinAndMax) {
  const std::vector<double> sorted{1, 2, 4, 8};
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 1.0), 8.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 0.5), 3.0);
}

}  // namespace
}  // namespace arch_bench
