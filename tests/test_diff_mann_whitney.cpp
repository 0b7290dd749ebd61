// mann_whitney_u() against scipy.stats.mannwhitneyu(x, y, alternative="two-sided",
// method="asymptotic", use_continuity=True), scipy 1.17.1; the numbers are hard-coded here so the
// tests do not need scipy.
#include <algorithm>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "runner/diff/mann_whitney.hpp"

namespace arch_bench {
namespace {

struct Case {
  std::vector<double> x, y;
  double u_x, u_y, p;
};

void expect_matches_scipy(const Case& c) {
  const MannWhitneyResult forward = mann_whitney_u(c.x, c.y);
  EXPECT_DOUBLE_EQ(forward.u_statistic, c.u_x);
  EXPECT_NEAR(forward.p_value, c.p, 1e-12 * std::max(1.0, c.p));
  EXPECT_EQ(forward.n_x, c.x.size());
  EXPECT_EQ(forward.n_y, c.y.size());
  // Two-sided: swapping the samples swaps U and keeps p.
  const MannWhitneyResult backward = mann_whitney_u(c.y, c.x);
  EXPECT_DOUBLE_EQ(backward.u_statistic, c.u_y);
  EXPECT_NEAR(backward.p_value, c.p, 1e-12 * std::max(1.0, c.p));
  EXPECT_DOUBLE_EQ(forward.u_statistic + backward.u_statistic, static_cast<double>(c.x.size() * c.y.size()));
}

TEST(MannWhitney, ScipyDocumentationExample) {
  // The males/females example of the scipy documentation (no ties).
  expect_matches_scipy({{19, 22, 16, 29, 24}, {20, 11, 17, 12}, 17.0, 3.0, 0.11134688653314041});
}

TEST(MannWhitney, TiesUseMidranksAndCorrectTheVariance) {
  expect_matches_scipy({{1, 2, 2, 3, 3, 3, 4, 5, 5, 6}, {3, 4, 4, 5, 6, 6, 7, 7, 8, 9}, 15.5, 84.5,
                        0.00949585610483713});
}

TEST(MannWhitney, CompletelySeparatedSamples) {
  const Case c{{1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7}, {2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7}, 0.0, 64.0,
               0.0009391056991171899};
  expect_matches_scipy(c);
  EXPECT_FALSE(mann_whitney_u(c.x, c.y).x_tends_larger());
  EXPECT_TRUE(mann_whitney_u(c.y, c.x).x_tends_larger());
}

TEST(MannWhitney, OverlappingTimingLikeSamplesOfUnequalSize) {
  expect_matches_scipy({{0.51, 0.49, 0.55, 0.47, 0.52, 0.50, 0.61, 0.48, 0.53, 0.50},
                        {0.54, 0.50, 0.58, 0.49, 0.57, 0.56, 0.52, 0.60, 0.55, 0.59, 0.62, 0.51},
                        30.0, 90.0, 0.05122611263076469});
}

TEST(MannWhitney, IdenticalSamplesGivePOne) {
  expect_matches_scipy({{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4, 5, 6, 7, 8}, 32.0, 32.0, 1.0});
}

TEST(MannWhitney, AllValuesTiedGivePOne) {
  // Zero variance: nothing separates the samples.
  const MannWhitneyResult r = mann_whitney_u(std::vector<double>(8, 2.0), std::vector<double>(9, 2.0));
  EXPECT_DOUBLE_EQ(r.u_statistic, 36.0);
  EXPECT_DOUBLE_EQ(r.mean_u, 36.0);
  EXPECT_DOUBLE_EQ(r.p_value, 1.0);
  EXPECT_FALSE(r.x_tends_larger());
}

TEST(MannWhitney, EmptySampleThrows) {
  const std::vector<double> some{1, 2, 3};
  EXPECT_THROW(mann_whitney_u({}, some), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u(some, {}), std::invalid_argument);
}

}  // namespace
}  // namespace arch_bench
