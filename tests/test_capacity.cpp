// The state-capacity probe: the curve's shape for the mechanisms whose memory is understood. The
// exact cache stays at cosine ~1; additive states blur well before n = head_dim; an additive memory
// addressed by orthogonal keys (mamba's, in its neutral setting) is exact up to its key width.
#include <gtest/gtest.h>

#include "mechanisms/registry.hpp"
#include "runner/measure/capacity.hpp"

namespace arch_bench {
namespace {

constexpr std::int64_t kHeadDim = 64;

const CapacityProbe& probe_of(const std::string& id, const MechanismOptions& options = {}) {
  const CapacityProbe* probe = find_mechanism(id)->capacity_probe(options);
  if (probe == nullptr) throw std::logic_error(id + " has no capacity probe");
  return *probe;
}

TEST(Capacity, SizesDoubleFrom16ToFourTimesHeadDimAndIncludeHeadDim) {
  EXPECT_EQ(capacity_sizes(64), (std::vector<std::int64_t>{16, 32, 64, 128, 256}));
  EXPECT_EQ(capacity_sizes(48), (std::vector<std::int64_t>{16, 32, 48, 64, 128}));
}

TEST(Capacity, KeysAreUnitNormAndOrthogonalWhenAsked) {
  const MatrixD keys = draw_capacity_keys(32, 64, 7, CapacityKeys::orthogonal);
  for (std::int64_t i = 0; i < keys.rows; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      double dot = 0;
      for (std::int64_t c = 0; c < keys.cols; ++c) dot += keys(i, c) * keys(j, c);
      EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-12);
    }
  }
  EXPECT_THROW(draw_capacity_keys(65, 64, 7, CapacityKeys::orthogonal), std::invalid_argument);
}

TEST(Capacity, TheExactCacheIsTheCeilingAtEveryN) {
  const CapacityCurve curve = measure_capacity(probe_of("softmax_kv"), kHeadDim, 1, capacity_sizes(kHeadDim));
  for (const CapacityPoint& point : curve.points) {
    EXPECT_GT(point.mean_cosine, 0.99) << "n = " << point.n;
    EXPECT_LT(point.mean_rel_l2, 0.1) << "n = " << point.n;
  }
  EXPECT_EQ(curve.largest_n_cosine_0_9, 4 * kHeadDim);
  EXPECT_NE(curve.setting.find("tau"), std::string::npos);
}

TEST(Capacity, AdditiveLinearAttentionDegradesWellBeforeHeadDim) {
  const CapacityCurve curve = measure_capacity(probe_of("linear_attention"), kHeadDim, 1, capacity_sizes(kHeadDim));
  ASSERT_FALSE(curve.points.empty());
  EXPECT_LT(curve.points.front().mean_cosine, 0.9) << "already blurred at n = 16";
  for (std::size_t i = 1; i < curve.points.size(); ++i) {
    EXPECT_LT(curve.points[i].mean_cosine, curve.points[i - 1].mean_cosine + 0.02) << "recall must not improve with n";
  }
  EXPECT_FALSE(curve.largest_n_cosine_0_9.has_value());
}

TEST(Capacity, MambasNeutralStateIsExactForOrthogonalKeysUpToItsStateSize) {
  MechanismOptions options;
  options.set("state_size", std::int64_t{16});
  const CapacityProbe& probe = probe_of("mamba", options);
  EXPECT_EQ(probe.key_dim(kHeadDim), 16);
  const CapacityPoint exact = capacity_point(probe, 16, kHeadDim, 3, CapacityKeys::orthogonal);
  EXPECT_GT(exact.mean_cosine, 1 - 1e-12);
  EXPECT_LT(exact.mean_rel_l2, 1e-12);
  const CapacityPoint crowded = capacity_point(probe, 64, kHeadDim, 3);
  EXPECT_LT(crowded.mean_cosine, 0.7) << "64 values in a 16-wide state cannot all be recalled";
}

TEST(Capacity, PerformerRecallIsNoBetterThanTheSoftmaxBlurItEstimates) {
  MechanismOptions options;
  options.set("feature_map", std::string("favor+"));
  options.set("features", std::int64_t{256});
  const CapacityPoint performer = capacity_point(probe_of("performer", options), 64, kHeadDim, 5);
  const CapacityPoint cache = capacity_point(probe_of("softmax_kv"), 64, kHeadDim, 5);
  EXPECT_TRUE(std::isfinite(performer.mean_cosine));
  EXPECT_LT(performer.mean_cosine, cache.mean_cosine);
}

TEST(Capacity, JsonCarriesTheCurveAndTheThreshold) {
  const CapacityCurve curve = measure_capacity(probe_of("softmax_kv"), 32, 1, {16, 32});
  const nlohmann::json json = capacity_json(curve);
  EXPECT_EQ(json["n"], (std::vector<std::int64_t>{16, 32}));
  EXPECT_EQ(json["mean_cosine"].size(), 2u);
  EXPECT_EQ(json["largest_n_cosine_0_9"], 32);
  EXPECT_EQ(json["key_dim"], 32);
}

}  // namespace
}  // namespace arch_bench
