// float8 (mechanisms/common/float8.hpp) and the scalar exponentials of fast_math.hpp against long
// double over their whole input ranges: the error bounds their comments state are what these tests
// hold them to. The file is compiled twice: as the build (one 8-float vector where the build has
// AVX) and, in x86-64 builds that have the SSE2 variant, with -march=x86-64 as that variant
// (FLOAT8_TEST_SUITE names its suite), where float8 is the pair of 4-float halves and nothing
// contracts into an FMA.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>

#include "mechanisms/common/fast_math.hpp"
#include "mechanisms/common/float8.hpp"

#ifndef FLOAT8_TEST_SUITE
#define FLOAT8_TEST_SUITE Float8Math
#endif

namespace arch_bench {
namespace {

using Lanes = std::array<float, kFloat8Lanes>;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

float8 from_lanes(const Lanes& lanes) { return load_float8(lanes.data()); }
Lanes lanes_of(float8 v) {
  Lanes lanes;
  store_float8(lanes.data(), v);
  return lanes;
}

// The largest relative error of f over x = lo + k (hi - lo) / steps, eight lanes at a time.
template <class F, class Exact>
double max_relative_error(F f, Exact exact, float lo, float hi, int steps) {
  double worst = 0.0;
  for (int k = 0; k <= steps; k += kFloat8Lanes) {
    Lanes x;
    for (int lane = 0; lane < kFloat8Lanes; ++lane) {
      x[lane] = lo + (hi - lo) * static_cast<float>(std::min(k + lane, steps)) / static_cast<float>(steps);
    }
    const Lanes y = lanes_of(f(from_lanes(x)));
    for (int lane = 0; lane < kFloat8Lanes; ++lane) {
      const long double want = exact(static_cast<long double>(x[lane]));
      worst = std::max(worst, static_cast<double>(std::fabs((y[lane] - want) / want)));
    }
  }
  return worst;
}

// The same for a scalar function, lane by lane, at run time as the kernels compute it: each lane
// is read through a volatile, so the compiler cannot fold some lanes of a constant input at compile
// time (x log2 e + 1.5 * 2^23 rounded twice) and compute the others with an FMA (rounded once).
// With -march=znver1, gcc 12 did, and e^-87 came out one ulp apart on lanes that must agree.
template <class F>
float8 lane_by_lane(F f, float8 x) {
  Lanes lanes = lanes_of(x);
  for (float& lane : lanes) {
    const volatile float at_run_time = lane;
    lane = f(at_run_time);
  }
  return from_lanes(lanes);
}

const auto exp_exact = [](long double x) { return std::exp(x); };

TEST(FLOAT8_TEST_SUITE, Exp2NonpositiveIsWithin1Point7eMinus7OfExp2DownToTheSmallestNormal) {
  const auto exp2_exact = [](long double x) { return std::exp2(x); };
  const auto f = [](float8 x) { return exp2_nonpositive(x); };
#if defined(__FMA__)
  constexpr double kBound = 1.7e-7;
#else
  constexpr double kBound = 2e-7;  // each multiply-add rounds twice (1.89e-7 measured with gcc 12)
#endif
  // Dense near 0 (where the polynomial alone answers) and over the whole normal range.
  EXPECT_LT(max_relative_error(f, exp2_exact, -1.0f, 0.0f, 200000), kBound);
  EXPECT_LT(max_relative_error(f, exp2_exact, -126.0f, 0.0f, 400000), kBound);
}

TEST(FLOAT8_TEST_SUITE, Exp2NonpositiveIsExactAtIntegersClampsBelowAndKeepsNaN) {
  const Lanes y = lanes_of(exp2_nonpositive(from_lanes({0.0f, -1.0f, -10.0f, -126.0f, -127.0f, -1000.0f, -kInf, kNaN})));
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 0.5f);
  EXPECT_EQ(y[2], std::ldexp(1.0f, -10));
  EXPECT_EQ(y[3], std::numeric_limits<float>::min());
  EXPECT_EQ(y[4], std::numeric_limits<float>::min());  // clamped: no denormal, no zero
  EXPECT_EQ(y[5], std::numeric_limits<float>::min());
  EXPECT_EQ(y[6], std::numeric_limits<float>::min());
  EXPECT_TRUE(std::isnan(y[7]));
}

// fast_math.hpp's degree-5 fit, measured with gcc 12: 1.62e-7 (float8) and 1.76e-7 (the scalar form,
// which gcc contracts into FMAs differently) with FMAs, 1.82e-7 without.
#if defined(__FMA__)
constexpr double kExpBound = 1.8e-7;
#else
constexpr double kExpBound = 1.9e-7;
#endif

TEST(FLOAT8_TEST_SUITE, ExpNonpositiveIsWithinItsBoundOfExpOnItsRange) {
  const auto f = [](float8 x) { return exp_nonpositive(x); };
  EXPECT_LT(max_relative_error(f, exp_exact, -1.0f, 0.0f, 200000), kExpBound);
  EXPECT_LT(max_relative_error(f, exp_exact, -87.0f, 0.0f, 400000), kExpBound);
}

TEST(FLOAT8_TEST_SUITE, ExpClampedIsWithinItsBoundOfExpUpTo88AndClampsAbove) {
  const auto f = [](float8 x) { return exp_clamped(x); };
  EXPECT_LT(max_relative_error(f, exp_exact, -87.0f, 88.0f, 400000), kExpBound);
  const Lanes y = lanes_of(exp_clamped(from_lanes({88.0f, 89.0f, 1000.0f, kInf, kNaN, -kInf, 0.0f, 1.0f})));
  const float at_88 = y[0];
  EXPECT_TRUE(std::isfinite(at_88));
  EXPECT_EQ(y[1], at_88);
  EXPECT_EQ(y[2], at_88);
  EXPECT_EQ(y[3], at_88);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_LT(y[5], 1e-37f);  // clamped at -87 below: e^-87, tiny and not negative
  EXPECT_GE(y[5], 0.0f);
  EXPECT_EQ(y[6], 1.0f);
}

// The scalar forms (fast_math.hpp), which `omp simd` loops vectorise, against the same bounds; the
// vector forms must agree with them to the last few ulps on the same inputs.
TEST(FLOAT8_TEST_SUITE, ScalarExponentialsHoldTheSameBoundsAndAgreeWithTheVectorForms) {
  const auto scalar_exp = [](float8 x) { return lane_by_lane([](float v) { return exp_nonpositive(v); }, x); };
  const auto scalar_clamped = [](float8 x) { return lane_by_lane([](float v) { return exp_clamped(v); }, x); };
  EXPECT_LT(max_relative_error(scalar_exp, exp_exact, -87.0f, 0.0f, 400000), kExpBound);
  EXPECT_LT(max_relative_error(scalar_clamped, exp_exact, -87.0f, 88.0f, 400000), kExpBound);
  const Lanes edges = lanes_of(lane_by_lane([](float v) { return exp_nonpositive(v); },
                                            from_lanes({0.0f, -1e-30f, -87.0f, -88.0f, -1e30f, -kInf, kNaN, -0.5f})));
  EXPECT_EQ(edges[0], 1.0f);
  EXPECT_EQ(edges[1], 1.0f);
  EXPECT_EQ(edges[3], edges[2]);  // clamped below at -87
  EXPECT_EQ(edges[4], edges[2]);
  EXPECT_EQ(edges[5], edges[2]);
  EXPECT_TRUE(std::isnan(edges[6]));
  EXPECT_NEAR(edges[7], std::exp(-0.5), kExpBound * std::exp(-0.5));
  for (float x = -87.0f; x <= 0.0f; x += 0.37f) {
    const Lanes vector = lanes_of(exp_nonpositive(broadcast_float8(x)));
    EXPECT_NEAR(vector[3], exp_nonpositive(x), 4e-7f * exp_nonpositive(x)) << "x = " << x;
  }
}

// The operators the kernels use, lane by lane against scalar arithmetic (the two-halves form
// spells out each one; the one-vector form is the compiler's).
TEST(FLOAT8_TEST_SUITE, OperatorsAndSelectActLaneByLane) {
  const Lanes a_lanes{1.0f, -2.0f, 3.5f, -0.25f, 8.0f, 0.0f, -7.0f, 100.0f};
  const Lanes b_lanes{0.5f, 4.0f, -1.0f, 2.0f, -8.0f, 3.0f, -7.0f, 0.125f};
  const float8 a = from_lanes(a_lanes), b = from_lanes(b_lanes);
  float8 accumulated = a;
  accumulated += b;
  accumulated *= 2.0f;
  accumulated -= 1.0f;
  const Lanes sum = lanes_of(a + b), difference = lanes_of(a - b), product = lanes_of(a * b),
              quotient = lanes_of(a / b), scaled = lanes_of(3.0f * a - b * 0.5f + 1.0f), inverse = lanes_of(1.0f / b),
              negated = lanes_of(-a), acc = lanes_of(accumulated), zero = lanes_of(float8{}),
              larger = lanes_of(select(a > b, a, b)), below = lanes_of(select(a < 0.0f, broadcast_float8(-1.0f), a)),
              lane_reads = lanes_of(from_lanes({a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]}));
  for (int i = 0; i < kFloat8Lanes; ++i) {
    const float x = a_lanes[i], y = b_lanes[i];
    EXPECT_EQ(sum[i], x + y) << i;
    EXPECT_EQ(difference[i], x - y) << i;
    EXPECT_EQ(product[i], x * y) << i;
    EXPECT_EQ(quotient[i], x / y) << i;
    EXPECT_FLOAT_EQ(scaled[i], 3.0f * x - y * 0.5f + 1.0f) << i;
    EXPECT_EQ(inverse[i], 1.0f / y) << i;
    EXPECT_EQ(negated[i], -x) << i;
    EXPECT_FLOAT_EQ(acc[i], (x + y) * 2.0f - 1.0f) << i;
    EXPECT_EQ(zero[i], 0.0f) << i;
    EXPECT_EQ(larger[i], x > y ? x : y) << i;
    EXPECT_EQ(below[i], x < 0.0f ? -1.0f : x) << i;
    EXPECT_EQ(lane_reads[i], x) << i;
  }
  EXPECT_EQ(sum_lanes(a), ((1.0f + -2.0f) + (3.5f + -0.25f)) + ((8.0f + 0.0f) + (-7.0f + 100.0f)));
}

TEST(FLOAT8_TEST_SUITE, Bf16LoadWidensEachLaneExactly) {
  const Lanes values{1.0f, -2.5f, 3.140625f, 0.0f, -0.0f, 65280.0f, 1.0e-3f, -kInf};
  std::array<bf16, kFloat8Lanes> stored;
  for (int i = 0; i < kFloat8Lanes; ++i) stored[i] = bf16(values[i]);
  const Lanes loaded = lanes_of(load_float8(stored.data()));
  for (int i = 0; i < kFloat8Lanes; ++i) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(loaded[i]), std::bit_cast<std::uint32_t>(to_float(stored[i]))) << i;
  }
}

}  // namespace
}  // namespace arch_bench
