// wide_vector.hpp's 16-lane exp2_nonpositive (vmaxps and vscalefps) against float8.hpp's, whose
// error bound test_float8_math.cpp holds: the same polynomial on the same reduction must give the
// same bits in every lane, so Mamba's scan computes the same states on either vector. Compiled as the
// build; where it has no AVX-512, wide_vector is float8 itself and there is nothing to compare.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "mechanisms/common/float8.hpp"
#include "mechanisms/common/wide_vector.hpp"

namespace arch_bench {
namespace {

#if defined(__AVX512F__)
using WideLanes = std::array<float, kWideLanes>;

WideLanes lanes_of(wide_vector v) {
  WideLanes lanes;
  store_lanes(lanes.data(), v);
  return lanes;
}

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

// 16 inputs through both forms: the wide one as one vector, the float8 one as two.
void expect_same_bits(const WideLanes& x) {
  const WideLanes wide = lanes_of(exp2_nonpositive(load_wide(x.data())));
  std::array<float, kWideLanes> narrow;
  for (std::int64_t half = 0; half < kWideLanes; half += kFloat8Lanes) {
    store_float8(narrow.data() + half, exp2_nonpositive(load_float8(x.data() + half)));
  }
  for (std::int64_t lane = 0; lane < kWideLanes; ++lane) {
    if (std::isnan(narrow[lane])) {
      EXPECT_TRUE(std::isnan(wide[lane])) << "x = " << x[lane];
    } else {
      EXPECT_EQ(bits_of(wide[lane]), bits_of(narrow[lane])) << "x = " << x[lane] << ": " << wide[lane] << " against "
                                                            << narrow[lane];
    }
  }
}

TEST(WideVectorMath, Exp2NonpositiveGivesFloat8sBitsOverItsWholeRange) {
  // Every 1/4096 from -130 to 0 (past the clamp at -126), sixteen lanes at a time.
  constexpr int kSteps = 130 * 4096;
  for (int k = 0; k < kSteps; k += kWideLanes) {
    WideLanes x;
    for (std::int64_t lane = 0; lane < kWideLanes; ++lane) {
      x[lane] = -static_cast<float>(std::min<int>(k + static_cast<int>(lane), kSteps)) / 4096.0f;
    }
    expect_same_bits(x);
    if (::testing::Test::HasFailure()) return;  // one report, not half a million
  }
}

TEST(WideVectorMath, Exp2NonpositiveGivesFloat8sBitsAtTheEdges) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float tiny = -std::numeric_limits<float>::denorm_min();
  const float payload_nan = std::bit_cast<float>(0x7fc001ffu);  // low bits set: must stay NaN
  expect_same_bits({0.0f, -0.0f, tiny, -1e-30f, -0.5f, payload_nan, -1.0f, -125.5f, -126.0f, -126.0001f, -127.0f,
                    -1000.0f, -1e30f, -kInf, kNaN, -kNaN});
  const WideLanes y = lanes_of(exp2_nonpositive(load_wide(WideLanes{0.0f, -1.0f, -126.0f, -kInf, kNaN}.data())));
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 0.5f);
  EXPECT_EQ(y[2], std::numeric_limits<float>::min());
  EXPECT_EQ(y[3], std::numeric_limits<float>::min());  // clamped: no denormal, no zero
  EXPECT_TRUE(std::isnan(y[4]));
}

TEST(WideVectorMath, FoldTo8LanesAddsLaneIAndLaneIPlus8) {
  WideLanes x;
  for (std::int64_t lane = 0; lane < kWideLanes; ++lane) x[lane] = static_cast<float>(1 << lane);
  std::array<float, kFloat8Lanes> folded;
  store_float8(folded.data(), fold_to_8_lanes(load_wide(x.data())));
  for (std::int64_t lane = 0; lane < kFloat8Lanes; ++lane) {
    EXPECT_EQ(folded[lane], static_cast<float>((1 << lane) + (1 << (lane + 8)))) << "lane " << lane;
  }
}
#else
TEST(WideVectorMath, Exp2NonpositiveGivesFloat8sBitsOverItsWholeRange) {
  GTEST_SKIP() << "this build has no AVX-512: wide_vector is float8";
}
#endif

}  // namespace
}  // namespace arch_bench
