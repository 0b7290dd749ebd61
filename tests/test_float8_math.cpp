// float8 exponentials (mechanisms/common/float8.hpp) against long-double exp over their whole
// input ranges: the error bounds their comments state are what these tests hold them to.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mechanisms/common/float8.hpp"

namespace arch_bench {
namespace {

// The largest relative error of f over x = lo + k (hi - lo) / steps, eight lanes at a time.
template <class F, class Exact>
double max_relative_error(F f, Exact exact, float lo, float hi, int steps) {
  double worst = 0.0;
  for (int k = 0; k <= steps; k += kFloat8Lanes) {
    float8 x;
    for (int lane = 0; lane < kFloat8Lanes; ++lane) {
      x[lane] = lo + (hi - lo) * static_cast<float>(std::min(k + lane, steps)) / static_cast<float>(steps);
    }
    const float8 y = f(x);
    for (int lane = 0; lane < kFloat8Lanes; ++lane) {
      const long double want = exact(static_cast<long double>(x[lane]));
      worst = std::max(worst, static_cast<double>(std::fabs((y[lane] - want) / want)));
    }
  }
  return worst;
}

TEST(Float8Math, Exp2NonpositiveIsWithin1Point7eMinus7OfExp2DownToTheSmallestNormal) {
  const auto exp2_exact = [](long double x) { return std::exp2(x); };
  const auto f = [](float8 x) { return exp2_nonpositive(x); };
  // Dense near 0 (where the polynomial alone answers) and over the whole normal range.
  EXPECT_LT(max_relative_error(f, exp2_exact, -1.0f, 0.0f, 200000), 1.7e-7);
  EXPECT_LT(max_relative_error(f, exp2_exact, -126.0f, 0.0f, 400000), 1.7e-7);
}

TEST(Float8Math, Exp2NonpositiveIsExactAtIntegersClampsBelowAndKeepsNaN) {
  float8 x{0.0f, -1.0f, -10.0f, -126.0f, -127.0f, -1000.0f, -std::numeric_limits<float>::infinity(),
           std::numeric_limits<float>::quiet_NaN()};
  const float8 y = exp2_nonpositive(x);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 0.5f);
  EXPECT_EQ(y[2], std::ldexp(1.0f, -10));
  EXPECT_EQ(y[3], std::numeric_limits<float>::min());
  EXPECT_EQ(y[4], std::numeric_limits<float>::min());  // clamped: no denormal, no zero
  EXPECT_EQ(y[5], std::numeric_limits<float>::min());
  EXPECT_EQ(y[6], std::numeric_limits<float>::min());
  EXPECT_TRUE(std::isnan(y[7]));
}

TEST(Float8Math, ExpNonpositiveIsWithin2eMinus7OfExpOnItsRange) {
  const auto exp_exact = [](long double x) { return std::exp(x); };
  const auto f = [](float8 x) { return exp_nonpositive(x); };
  EXPECT_LT(max_relative_error(f, exp_exact, -1.0f, 0.0f, 200000), 2e-7);
  EXPECT_LT(max_relative_error(f, exp_exact, -87.0f, 0.0f, 400000), 2e-7);
}

}  // namespace
}  // namespace arch_bench
