// The four contracts of seed 003 (45_linear_recurrent_state, Step 4), on the fp64 reference and
// on the float kernels.
#include <gtest/gtest.h>

#include <stdexcept>

#include "mechanisms/common/feature_maps.hpp"
#include "mechanisms/linear_attention/cpu.hpp"
#include "mechanisms/linear_attention/reference.hpp"

namespace arch_bench {
namespace {

MatrixD matrix(std::int64_t rows, std::int64_t cols, std::initializer_list<double> values) {
  MatrixD m(rows, cols);
  std::copy(values.begin(), values.end(), m.data.begin());
  return m;
}

// The seed's three-step fixture.
struct Fixture {
  MatrixD q = matrix(3, 2, {1.0, -1.0, 0.5, 2.0, 3.0, -0.5});
  MatrixD k = matrix(3, 2, {0.0, 1.0, 2.0, -1.0, 1.5, 1.5});
  MatrixD v = matrix(3, 1, {1.0, 2.0, 4.0});
};

TEST(SeedContracts, FeatureMapIsPositiveSameShapeAndRejectsEmpty) {
  for (FeatureMap map : {FeatureMap::elu_plus_one, FeatureMap::relu_plus_one}) {
    const MatrixD x = matrix(2, 3, {-2.0, 0.0, 3.0, -50.0, 1e-3, -1e-3});
    const MatrixD phi = positive_feature_map(x, map);
    EXPECT_EQ(phi.rows, x.rows);
    EXPECT_EQ(phi.cols, x.cols);
    for (double value : phi.data) EXPECT_GT(value, 0.0);
    EXPECT_THROW(positive_feature_map(MatrixD(0, 2), map), std::invalid_argument);
  }
  // The seed's reference answer is relu(x)+1; elu(x)+1 agrees for x >= 0.
  EXPECT_DOUBLE_EQ(apply_feature_map(FeatureMap::relu_plus_one, -2.0), 1.0);
  EXPECT_DOUBLE_EQ(apply_feature_map(FeatureMap::elu_plus_one, 2.0), 3.0);
  EXPECT_NEAR(apply_feature_map(FeatureMap::elu_plus_one, -2.0), std::exp(-2.0), 1e-15);
}

TEST(SeedContracts, StateShapeIsFixedAndNormaliserPositive) {
  const Fixture f;
  for (std::int64_t tokens = 1; tokens <= 3; ++tokens) {
    MatrixD q(tokens, 2), k(tokens, 2), v(tokens, 1);
    std::copy_n(f.q.data.begin(), tokens * 2, q.data.begin());
    std::copy_n(f.k.data.begin(), tokens * 2, k.data.begin());
    std::copy_n(f.v.data.begin(), tokens, v.data.begin());
    const LinearAttentionResult result = linear_attention_scan(q, k, v);
    EXPECT_EQ(result.outputs.rows, tokens);
    EXPECT_EQ(result.outputs.cols, 1);
    EXPECT_EQ(result.state.rows, 2);  // [dk, dv] whatever the length
    EXPECT_EQ(result.state.cols, 1);
    ASSERT_EQ(result.normalizer.size(), 2u);
    for (double z : result.normalizer) EXPECT_GT(z, 0.0);
    for (double o : result.outputs.data) EXPECT_TRUE(std::isfinite(o));
  }
}

TEST(SeedContracts, SeedFixtureMatchesHandComputedOutputsWithReluMap) {
  // relu+1 map, by hand: t=0: phi(k0)=(1,2), phi(q0)=(2,1): o = (2*1+1*2)/(2*1+1*2) * 1 = 1.
  const Fixture f;
  const LinearAttentionResult result = linear_attention_scan(f.q, f.k, f.v, FeatureMap::relu_plus_one);
  EXPECT_NEAR(result.outputs(0, 0), 1.0, 1e-12);
  // t=1: phi(k1)=(3,1); S=(1*1+3*2, 2*1+1*2)=(7,4), z=(4,3); phi(q1)=(1.5,3): (10.5+12)/(6+9)=1.5.
  EXPECT_NEAR(result.outputs(1, 0), 1.5, 1e-12);
}

TEST(SeedContracts, PrefixCausalityFutureTokensNeverChangeEarlierOutputs) {
  const Fixture f;
  const LinearAttentionResult original = linear_attention_scan(f.q, f.k, f.v);
  Fixture changed;
  changed.k(2, 0) += 100.0;
  changed.k(2, 1) += 100.0;
  changed.v(2, 0) += 100.0;
  const LinearAttentionResult after = linear_attention_scan(changed.q, changed.k, changed.v);
  EXPECT_EQ(original.outputs(0, 0), after.outputs(0, 0));
  EXPECT_EQ(original.outputs(1, 0), after.outputs(1, 0));
  EXPECT_NE(original.outputs(2, 0), after.outputs(2, 0));  // the change is visible where allowed
}

TEST(SeedContracts, PrefixCausalityHoldsForTheChunkwiseKernel) {
  // 100 tokens span two chunks: a change at token 70 must not move outputs 0..69.
  const std::int64_t tokens = 100, dim = 8;
  std::vector<float> q(tokens * dim), k(tokens * dim), v(tokens * dim);
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = std::sin(0.37f * i);
    k[i] = std::cos(0.11f * i);
    v[i] = std::sin(0.05f * i + 1.0f);
  }
  const LinearAttentionShape shape{1, dim, dim, FeatureMap::elu_plus_one};
  auto outputs = [&](const std::vector<float>& keys) {
    std::vector<float> state(dim * dim, 0.0f), z(dim, 0.0f), out(tokens * dim);
    linear_attention_prefill_chunkwise(shape, tokens, q.data(), keys.data(), v.data(), state.data(), z.data(),
                                       out.data());
    return out;
  };
  const std::vector<float> before = outputs(k);
  std::vector<float> changed_k = k;
  for (std::int64_t c = 0; c < dim; ++c) changed_k[70 * dim + c] += 50.0f;
  const std::vector<float> after = outputs(changed_k);
  for (std::int64_t i = 0; i < 70 * dim; ++i) ASSERT_EQ(before[i], after[i]) << "element " << i;
  EXPECT_NE(before[70 * dim], after[70 * dim]);
}

TEST(SeedContracts, InputContractRejectsMismatchedShapesAndEmptySequences) {
  EXPECT_THROW(linear_attention_scan(MatrixD(2, 2), MatrixD(2, 3), MatrixD(2, 1)), std::invalid_argument);
  EXPECT_THROW(linear_attention_scan(MatrixD(0, 2), MatrixD(0, 2), MatrixD(0, 1)), std::invalid_argument);
  EXPECT_THROW(linear_attention_scan(MatrixD(3, 2), MatrixD(3, 2), MatrixD(2, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace arch_bench
