// The polynomial exp2 of mamba's entry prefill (mechanisms/mamba/exp2_poly.hpp) on the CPU, over the
// whole input range the kernel can feed it: x = dt (A log2 e) <= 0, from 0 down to -inf. The kernel
// and its replay call this very function, so its error here is the kernel's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "mechanisms/mamba/exp2_poly.hpp"

namespace arch_bench {
namespace {

// The stated bound (docs/gpu-guide.md): the Remez fit's 7.5e-8 in exact arithmetic plus the fp32
// Horner evaluation's roundings; measured 2.1e-7 (printed below).
constexpr double kMambaExp2PolyMaxRelError = 2.5e-7;

float from_bits(std::uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

double relative_error(float x, float (*exp2_fn)(float)) {
  const double exact = std::exp2(static_cast<double>(x));
  return std::fabs(static_cast<double>(exp2_fn(x)) - exact) / exact;
}

float wrong_c2(float x) {
  return mamba_exp2_poly_eval(x, kMambaExp2PolyC0, kMambaExp2PolyC1, kMambaExp2PolyC2 * 1.01f, kMambaExp2PolyC3,
                              kMambaExp2PolyC4, kMambaExp2PolyC5);
}

// The largest relative error over the inputs whose 2^x is a normal float (x >= -126): every fp32
// value of [-1, 0] at a stride of 61 bit patterns (every exponent, 16 million values), and across
// every binade down to -126 at a stride of 4099.
double max_relative_error_normal_range(float (*exp2_fn)(float)) {
  double worst = 0.0;
  const std::uint32_t minus_zero = 0x80000000u, minus_one = 0xbf800000u, minus_126 = 0xc2fc0000u;
  for (std::uint32_t bits = minus_zero; bits <= minus_one; bits += 61) {
    worst = std::fmax(worst, relative_error(from_bits(bits), exp2_fn));
  }
  for (std::uint32_t bits = minus_one; bits <= minus_126; bits += 4099) {
    worst = std::fmax(worst, relative_error(from_bits(bits), exp2_fn));
  }
  // Every half-integer and integer (the edges of the reduced argument f = +-1/2, 0).
  for (int twice = 0; twice >= -252; --twice) worst = std::fmax(worst, relative_error(0.5f * static_cast<float>(twice), exp2_fn));
  return worst;
}

TEST(MambaExp2Poly, RelativeErrorWithinTheStatedBoundOverTheNormalRange) {
  const double worst = max_relative_error_normal_range(mamba_exp2_poly);
  std::printf("polynomial exp2: max relative error %.3g over x in [-126, 0] (bound %.3g)\n", worst,
              kMambaExp2PolyMaxRelError);
  EXPECT_LT(worst, kMambaExp2PolyMaxRelError);
  EXPECT_GT(worst, 0.0);
}

// The identity step (dt = 0) stays exact, and the ends of the range: results below 2^-126 are
// subnormal down to x = -126.5 and exactly 0 past it, like ex2.approx.ftz's flush (both within
// 2^-126 of the truth); -inf, the lowest float and NaN (not fed by the kernel) give 0.
TEST(MambaExp2Poly, EndsOfTheRange) {
  EXPECT_EQ(mamba_exp2_poly(0.0f), 1.0f);
  EXPECT_EQ(mamba_exp2_poly(-0.0f), 1.0f);
  EXPECT_EQ(mamba_exp2_poly(-1.0f), 0.5f);
  EXPECT_EQ(mamba_exp2_poly(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(mamba_exp2_poly(std::numeric_limits<float>::lowest()), 0.0f);
  EXPECT_EQ(mamba_exp2_poly(-127.0f), 0.0f);
  EXPECT_EQ(mamba_exp2_poly(-126.51f), 0.0f);
  EXPECT_EQ(mamba_exp2_poly(std::numeric_limits<float>::quiet_NaN()), 0.0f);
  const float smallest_normal = std::numeric_limits<float>::min();
  for (const float x : {-126.0f, -126.2f, -126.49f}) {
    const double exact = std::exp2(static_cast<double>(x));
    EXPECT_LT(std::fabs(mamba_exp2_poly(x) - exact), smallest_normal) << x;
    EXPECT_GE(mamba_exp2_poly(x), 0.0f) << x;
  }
  // Monotone non-increasing going down, across the reduction's edges (no jump at f = +-1/2).
  float previous = mamba_exp2_poly(0.0f);
  for (int i = 1; i <= 126 * 64; ++i) {
    const float x = -static_cast<float>(i) / 64.0f, v = mamba_exp2_poly(x);
    EXPECT_LE(v, previous) << x;
    previous = v;
  }
}

// The check has power: a coefficient 1% off (c2) misses the bound by far more than 3x.
TEST(MambaExp2Poly, AWrongCoefficientFailsTheBound) {
  const double worst = max_relative_error_normal_range(wrong_c2);
  std::printf("polynomial exp2 with c2 1%% too large: max relative error %.3g (bound %.3g)\n", worst,
              kMambaExp2PolyMaxRelError);
  EXPECT_GT(worst, 3 * kMambaExp2PolyMaxRelError);
}

}  // namespace
}  // namespace arch_bench
