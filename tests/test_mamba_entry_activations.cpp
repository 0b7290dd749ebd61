// softplus and silu of mamba's entry prefill (mechanisms/mamba/entry_activations.hpp), in their host
// form (exp2f and 1 / x where the device takes ex2.approx and rcp.approx, each within 2 ulp), against
// fp64 over the whole range the kernel feeds them: dt_raw + dt_bias and z, any finite float. The
// relative error of softplus stays small for very negative x too (dt tiny), where log(1 + e)
// computed from a rounded 1 + e would lose it. A series cut too early fails the same bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "mechanisms/mamba/entry_activations.hpp"

namespace arch_bench {
namespace {

// The stated bounds (docs/gpu-guide.md); measured values are printed (9.7e-7 and 9.9e-7 for
// |x| <= 16, 3.8e-6 and 9.6e-6 over the normal range), with room for the device's ex2.approx and
// rcp.approx (2 ulp where exp2f and the division are within 1). For |x| <= 16 (dt down to 1e-7,
// the range trained dt lives in), and over the whole range whose result is a normal float: there
// exp(-|x|) is exp2 of -|x| log2 e rounded to fp32, whose absolute rounding (up to 2^-25 |x| log2 e)
// grows with |x|. Below, the device's ex2.approx.ftz flushes e, and so softplus and silu, to 0 (the
// reference's values there are below 1e-37).
constexpr double kEntryActivationMaxRelError = 1.5e-6;
constexpr double kEntryActivationMaxRelErrorNormalRange = 1.5e-5;
constexpr float kTrainedRange = 16.0f;

double softplus_exact(double x) { return std::fmax(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }
double silu_exact(double z) { return z / (1.0 + std::exp(-z)); }

float from_bits(std::uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// Every 257th fp32 bit pattern of [-limit, limit] (both signs, every binade; up to 16 million
// values) and the ends, where the exact result is a normal float.
template <class F, class G>
double max_relative_error(F approx, G exact, float limit) {
  double worst = 0.0;
  auto at = [&](float x) {
    const double e = exact(static_cast<double>(x));
    if (std::fabs(e) < 1.1754943508222875e-38 || std::fabs(x) > limit) return;
    worst = std::fmax(worst, std::fabs(static_cast<double>(approx(x)) - e) / std::fabs(e));
  };
  for (const std::uint32_t sign : {0u, 0x80000000u}) {
    for (std::uint32_t bits = 0; bits <= 0x43000000u; bits += 257) at(from_bits(sign | bits));
  }
  for (const float x : {-87.0f, -80.0f, -20.0f, -16.0f, -1e-30f, 0.0f, 1e-30f, 16.0f, 20.0f, 80.0f}) at(x);
  return worst;
}

// The same softplus with its atanh series cut after w^5 (the check's power).
float softplus_short_series(float x) {
  const float e = entry_exp2(-fabsf(x) * kEntryLog2e);
  const float w = e * entry_reciprocal(2.0f + e), t = w * w;
  const float q = fmaf(fmaf(1.0f / 5.0f, t, 1.0f / 3.0f), t, 1.0f);
  return fmaf(2.0f, w * q, fmaxf(x, 0.0f));
}

TEST(MambaEntryActivations, SoftplusWithinItsBoundOverTheWholeRange) {
  const double trained = max_relative_error(entry_softplus, softplus_exact, kTrainedRange);
  const double normal = max_relative_error(entry_softplus, softplus_exact, 128.0f);
  std::printf("entry softplus: max relative error %.3g for |x| <= 16 (bound %.3g), %.3g over the normal range (%.3g)\n",
              trained, kEntryActivationMaxRelError, normal, kEntryActivationMaxRelErrorNormalRange);
  EXPECT_LT(trained, kEntryActivationMaxRelError);
  EXPECT_LT(normal, kEntryActivationMaxRelErrorNormalRange);
  EXPECT_EQ(entry_softplus(200.0f), 200.0f);
}

TEST(MambaEntryActivations, SiluWithinItsBoundOverTheWholeRange) {
  const double trained = max_relative_error(entry_silu, silu_exact, kTrainedRange);
  const double normal = max_relative_error(entry_silu, silu_exact, 128.0f);
  std::printf("entry silu: max relative error %.3g for |z| <= 16 (bound %.3g), %.3g over the normal range (%.3g)\n",
              trained, kEntryActivationMaxRelError, normal, kEntryActivationMaxRelErrorNormalRange);
  EXPECT_LT(trained, kEntryActivationMaxRelError);
  EXPECT_LT(normal, kEntryActivationMaxRelErrorNormalRange);
  EXPECT_EQ(entry_silu(0.0f), 0.0f);
  EXPECT_EQ(entry_silu(-200.0f), -0.0f);
  EXPECT_EQ(entry_silu(200.0f), 200.0f);
}

TEST(MambaEntryActivations, ASeriesCutTooEarlyFailsTheBound) {
  const double worst = max_relative_error(softplus_short_series, softplus_exact, kTrainedRange);
  std::printf("entry softplus cut after w^5: max relative error %.3g (bound %.3g)\n", worst, kEntryActivationMaxRelError);
  EXPECT_GT(worst, 3 * kEntryActivationMaxRelError);
}

}  // namespace
}  // namespace arch_bench
