// retnet: recurrent vs chunkwise, decode vs prefill, causality, kernels vs the fp64 reference,
// extreme decays, the prepared cells and the capacity probe.
#include <gtest/gtest.h>

#include <cmath>

#include "mechanisms/capacity.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/retnet/cpu.hpp"
#include "mechanisms/retnet/reference.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "support/causality.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/prepared_cells.hpp"
#include "support/capacity_checks.hpp"
#include "support/prefill_decode_checks.hpp"

namespace arch_bench {
namespace {
using testing::relative_max_error;
using testing::small_cell;

struct PrefillResult {
  std::vector<float> out, state;
};

std::vector<double> run_gammas(std::int64_t heads) {
  std::vector<double> gamma;
  for (std::int64_t h = 0; h < heads; ++h) gamma.push_back(retnet_gamma(h));
  return gamma;
}

template <class T>
PrefillResult prefill(const AttentionInputs& in, const std::vector<double>& gamma, bool chunkwise) {
  const RetNetShape shape{in.batch_heads, static_cast<std::int64_t>(gamma.size()), in.dim, in.dim};
  const auto q = testing::to_storage<T>(in.q), k = testing::to_storage<T>(in.k), v = testing::to_storage<T>(in.v);
  std::vector<T> out(q.size());
  PrefillResult r{{}, std::vector<float>(in.batch_heads * in.dim * in.dim, 0.0f)};
  if (chunkwise) {
    retnet_prefill_chunkwise(shape, gamma.data(), in.tokens, q.data(), k.data(), v.data(), r.state.data(), out.data());
  } else {
    retnet_prefill_recurrent(shape, gamma.data(), in.tokens, q.data(), k.data(), v.data(), r.state.data(), out.data());
  }
  r.out = testing::to_floats(out);
  return r;
}

std::vector<float> reference_outputs(const AttentionInputs& in, const std::vector<double>& gamma) {
  std::vector<float> out;
  const std::int64_t heads = static_cast<std::int64_t>(gamma.size());
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    const RetNetResult ref = retnet_scan(in.head_matrix(in.q, h, in.tokens), in.head_matrix(in.k, h, in.tokens),
                                         in.head_matrix(in.v, h, in.tokens), gamma[h % heads]);
    out.insert(out.end(), ref.outputs.data.begin(), ref.outputs.data.end());
  }
  return out;
}

TEST(RetNet, GammaPerHeadIsOneMinusTwoToTheMinusFiveMinusH) {
  EXPECT_EQ(retnet_gamma(0), 0.96875);
  EXPECT_EQ(retnet_gamma(3), 1.0 - 1.0 / 256);
  EXPECT_EQ(retnet_gamma(7), 1.0 - 1.0 / 4096);
}

TEST(RetNet, RecurrentEqualsChunkwisePrefillOutputsAndStates) {
  // 200 tokens: three full chunks of 64 and a partial one; 4 heads, so four decays; head_dim 48
  // exercises the matrix products' narrow column tails.
  for (std::int64_t dim : {32, 48}) {
    const AttentionInputs in = make_attention_inputs(small_cell(4, dim, 0, DType::float32), 200, 21);
    const auto gamma = run_gammas(4);
    SCOPED_TRACE(dim);
    testing::expect_chunkwise_equals_recurrent([&](bool chunkwise) { return prefill<float>(in, gamma, chunkwise); });
  }
}

TEST(RetNet, ChunkwiseMatchesFp64ReferenceFloat32) {
  const AttentionInputs in = make_attention_inputs(small_cell(3, 64, 0, DType::float32), 300, 22);
  EXPECT_LT(relative_max_error(prefill<float>(in, run_gammas(3), true).out, reference_outputs(in, run_gammas(3))), 1e-5);
}

TEST(RetNet, Bfloat16StaysWithinToleranceOfFp64) {
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 0, DType::bfloat16), 1000, 23);
  const auto gamma = run_gammas(2);
  testing::expect_bf16_prefills_within_tolerance(prefill<bf16>(in, gamma, true).out, prefill<bf16>(in, gamma, false).out,
                                                 reference_outputs(in, gamma));
}

TEST(RetNet, DecodeAtPositionTEqualsRowTOfPrefill) {
  const auto gamma = run_gammas(2);
  // Widths that take every path of the state pass (state_pass.hpp): slices of four wide
  // vectors (64), a float8 after them (72 with AVX-512), and scalar columns (100 = 96 + 4).
  testing::expect_decode_at_position_t_equals_row_t_of_prefill(
      {32, 64, 72, 100}, [&](const AttentionInputs& in) { return prefill<float>(in, gamma, true); },
      [&](const AttentionInputs& in, std::int64_t t, const testing::DecodeToken& token) {
        PrefillResult context = prefill<float>(testing::first_tokens(in, t), gamma, true);
        const RetNetShape shape{in.batch_heads, 2, in.dim, in.dim};
        std::vector<float> out(in.batch_heads * in.dim);
        retnet_decode_step(shape, gamma.data(), token.q.data(), token.k.data(), token.v.data(), context.state.data(),
                           out.data());
        return PrefillResult{out, context.state};
      });
}

TEST(RetNet, ChangingTokenJLeavesEarlierOutputsUnchanged) {
  const std::int64_t tokens = 150, j = 97;
  const AttentionInputs in = make_attention_inputs(small_cell(2, 32, 0, DType::float32), tokens, 32);
  AttentionInputs changed = in;
  testing::change_token(changed, j);
  const auto gamma = run_gammas(2);
  const PrefillResult a = prefill<float>(in, gamma, true), b = prefill<float>(changed, gamma, true);
  testing::expect_changed_from_token(a.out, b.out, in, j);
}

TEST(RetNet, FiniteAtL8192WithDecaysNearZeroAndNearOne) {
  for (double gamma : {1e-3, 1.0 - 1e-7, 1.0}) {
    const AttentionInputs in = make_attention_inputs(small_cell(1, 32, 0, DType::float32), 8192, 33);
    const PrefillResult r = prefill<float>(in, {gamma}, true);
    SCOPED_TRACE(gamma);
    testing::expect_finite_with_accurate_last_rows(r.out, r.state, reference_outputs(in, {gamma}), 32);
  }
}

// One fp32 d x d state per head (the contract every mechanism meets is in test_mechanism_contract.cpp).
TEST(RetNet, StateIsOneFp32MatrixPerHead) {
  const Mechanism* retnet = find_mechanism("retnet");
  ASSERT_NE(retnet, nullptr);
  EXPECT_EQ(retnet->state_bytes(small_cell(8, 64, 8192, DType::bfloat16)), 8 * 64 * 64 * 4);
}

TEST(RetNet, CapacityProbeIsTheAdditiveStateAtGammaOne) {
  const Mechanism* retnet = find_mechanism("retnet");
  ASSERT_NE(retnet, nullptr);
  const CapacityProbe* probe = retnet->capacity_probe(MechanismOptions{});
  ASSERT_NE(probe, nullptr);
  EXPECT_NE(probe->setting().find("gamma = 1"), std::string::npos);
  // Orthogonal unit keys (the coordinate axes): the additive state recalls them exactly ...
  const std::int64_t d = 16;
  testing::expect_one_hot_keys_recalled(*probe, /*n=*/d, /*channels=*/d, 1e-12);
  // ... and the same key written twice returns the sum of its values (an additive rule).
  MatrixD twice(2, d), two_values(2, d);
  twice(0, 3) = twice(1, 3) = 1.0;
  for (std::int64_t j = 0; j < d; ++j) two_values(0, j) = 1.0, two_values(1, j) = 2.0;
  EXPECT_NEAR(probe->recall(twice, two_values)(1, 5), 3.0, 1e-12);
}

}  // namespace
}  // namespace arch_bench
