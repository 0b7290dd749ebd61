// linear_attention's bf16 prefill on tensor cores (mechanisms/linear_attention/cuda_tensor_core.cu),
// on the CPU: its dispatch and workspace, and its whole arithmetic replayed (tests/support/
// scalar_decay_replay.hpp: phi rounded to bf16 as the operand loads do, V extended by the ones
// column that carries the normaliser, the shared chunkwise kernels' roundings, then the epilogue's
// division) against the fp64 reference through the cells' own check, for every row and for the
// final (S, z) the decode continues from.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/linear_attention/check.hpp"
#include "mechanisms/linear_attention/cuda_plan.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/scalar_decay_replay.hpp"

namespace arch_bench {
namespace {

using testing::ChunkStateStorage;
using testing::ScalarDecayHead;
using testing::small_cell;
using testing::to_bf16;

// How the kernels hold the per-chunk states (chunk_scalar_decay_plan.hpp).
constexpr ChunkStateStorage kStorage = ChunkStateStorage::bf16;

// Tokens [first, first + rows) of head bh as the policy loads them: bf16(phi(q)), bf16(phi(k)),
// [v | 1 | 0 ...] over dv + 16 columns, no decay.
ScalarDecayHead policy_operands(const AttentionInputs& in, std::int64_t bh, std::int64_t first, std::int64_t rows,
                                FeatureMap map) {
  const int d = static_cast<int>(in.dim), width = linear_attention_extended_value_columns(d);
  ScalarDecayHead h;
  h.tokens = rows;
  h.dk = d;
  h.dv = width;
  h.log_decay.assign(static_cast<std::size_t>(rows), 0.0f);
  for (std::int64_t t = 0; t < rows; ++t) {
    for (int i = 0; i < d; ++i) {
      h.q.push_back(to_bf16(apply_feature_map(map, in.q_at(bh, first + t)[i])));
      h.k.push_back(to_bf16(apply_feature_map(map, in.k_at(bh, first + t)[i])));
    }
    for (int j = 0; j < width; ++j) h.v.push_back(j < d ? in.v_at(bh, first + t)[j] : (j == d ? 1.0f : 0.0f));
  }
  return h;
}

// The replayed prefill of tokens [first, first + rows) of every head, continuing from `extended`
// ([bh][d][d + 16], updated): the bf16 outputs [bh][rows][d] as the epilogue stores them.
std::vector<float> replay_prefill(const AttentionInputs& in, std::int64_t first, std::int64_t rows, FeatureMap map,
                                  std::vector<std::vector<float>>& extended) {
  const int d = static_cast<int>(in.dim), width = linear_attention_extended_value_columns(d);
  std::vector<float> out;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    testing::ScalarDecayReplay r = testing::replay_chunk_scalar_decay(policy_operands(in, bh, first, rows, map),
                                                                      extended[static_cast<std::size_t>(bh)], kStorage);
    for (std::int64_t t = 0; t < rows; ++t) {
      const float* o = r.outputs.data() + t * width;
      for (int j = 0; j < d; ++j) out.push_back(to_bf16(o[j] / o[d]));
    }
    extended[static_cast<std::size_t>(bh)] = std::move(r.state);
  }
  return out;
}

std::vector<std::vector<float>> zero_states(const AttentionInputs& in) {
  const std::int64_t d = in.dim;
  return std::vector<std::vector<float>>(static_cast<std::size_t>(in.batch_heads),
                                         std::vector<float>(static_cast<std::size_t>(d * linear_attention_extended_value_columns(d)), 0.0f));
}

TEST(LinearAttentionTensorCore, RunsTheBf16PrefillOfSixteenMultipleHeadsUpTo112) {
  for (const std::int64_t d : {16, 64, 112}) {
    EXPECT_TRUE(linear_attention_cuda_prefill_on_tensor_cores(small_cell(8, d, 1000, DType::bfloat16, Phase::prefill))) << d;
  }
  // fp32 keeps the SIMT kernels (tf32 would break 1e-4); decode is one fused step; 128 + 16 columns
  // exceed the shared kernels' 128; 100 is off the wmma grid.
  EXPECT_FALSE(linear_attention_cuda_prefill_on_tensor_cores(small_cell(8, 64, 1000, DType::float32, Phase::prefill)));
  EXPECT_FALSE(linear_attention_cuda_prefill_on_tensor_cores(small_cell(8, 64, 1000, DType::bfloat16, Phase::decode)));
  EXPECT_FALSE(linear_attention_cuda_prefill_on_tensor_cores(small_cell(8, 128, 1000, DType::bfloat16, Phase::prefill)));
  EXPECT_FALSE(linear_attention_cuda_prefill_on_tensor_cores(small_cell(8, 100, 1000, DType::bfloat16, Phase::prefill)));
}

TEST(LinearAttentionTensorCore, WorkspaceIsTheSharedPlansPlusTheExtendedState) {
  const Cell cell = small_cell(8, 64, 8192, DType::bfloat16, Phase::prefill);
  const ChunkScalarDecayPlan plan = plan_linear_attention_tensor_core_prefill(8, 8192, 64);
  EXPECT_EQ(plan.dk, 64);
  EXPECT_EQ(plan.dv, 80) << "64 value columns, the ones column, 15 zero columns";
  EXPECT_EQ(linear_attention_extended_state_elements(plan), 8 * 64 * 80);
  EXPECT_EQ(linear_attention_cuda_workspace_bytes(cell), plan.workspace_bytes() + 4 * 8 * 64 * 80);
  EXPECT_EQ(plan.workspace_bytes(), chunk_scalar_decay_workspace_bytes(8, 8192, 64, 80));
}

class LinearAttentionTensorCoreReplay
    : public ::testing::TestWithParam<std::tuple<FeatureMap, std::int64_t, std::int64_t>> {};

TEST_P(LinearAttentionTensorCoreReplay, MatchesTheFp64ReferenceInEveryRowAndTheFinalState) {
  const auto [map, dim, length] = GetParam();
  const AttentionInputs in = make_attention_inputs(small_cell(2, dim, length, DType::bfloat16, Phase::prefill), length, 23);
  std::vector<std::vector<float>> extended = zero_states(in);
  const std::vector<float> out = replay_prefill(in, 0, length, map, extended);
  const Accuracy accuracy = check_linear_attention_prefill(in, map, out.data());
  EXPECT_TRUE(accuracy.output_finite);
  EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(DType::bfloat16));
  RecordProperty("max_rel_error", std::to_string(accuracy.max_rel_error));

  // The final [S | z | 0] against the reference's (S, z): phi(k) and v enter as bf16 products
  // summed in fp32, so the state is within bf16's rounding of phi.
  const int d = static_cast<int>(dim), width = linear_attention_extended_value_columns(d);
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    const LinearAttentionResult ref = linear_attention_reference_for_head(in, bh, length, map);
    const std::vector<float>& s = extended[static_cast<std::size_t>(bh)];
    double max_s = 0, err_s = 0, max_z = 0, err_z = 0;
    for (int i = 0; i < d; ++i) {
      for (int j = 0; j < d; ++j) {
        max_s = std::max(max_s, std::fabs(ref.state(i, j)));
        err_s = std::max(err_s, std::fabs(ref.state(i, j) - s[static_cast<std::size_t>(i * width + j)]));
      }
      max_z = std::max(max_z, std::fabs(ref.normalizer[static_cast<std::size_t>(i)]));
      err_z = std::max(err_z, std::fabs(ref.normalizer[static_cast<std::size_t>(i)] - s[static_cast<std::size_t>(i * width + d)]));
      for (int j = d + 1; j < width; ++j) ASSERT_EQ(s[static_cast<std::size_t>(i * width + j)], 0.0f) << "padding column";
    }
    EXPECT_LT(err_s / max_s, dtype_tolerance(DType::bfloat16)) << bh;
    EXPECT_LT(err_z / max_z, dtype_tolerance(DType::bfloat16)) << bh;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LinearAttentionTensorCoreReplay,
    ::testing::Combine(::testing::Values(FeatureMap::elu_plus_one, FeatureMap::relu_plus_one),
                       ::testing::Values<std::int64_t>(16, 64),
                       ::testing::Values<std::int64_t>(1, 63, 64, 65, 300)),
    [](const auto& info) {
      return feature_map_name(std::get<0>(info.param)) + "_d" + std::to_string(std::get<1>(info.param)) + "_L" +
             std::to_string(std::get<2>(info.param));
    });

TEST(LinearAttentionTensorCore, ReplayedLongSequenceStaysInsideTheBf16Tolerance) {
  // 2048 tokens (32 chunks) of d = 112, the widest head it takes: the carried (S, z) grow with L.
  const AttentionInputs in = make_attention_inputs(small_cell(1, 112, 2048, DType::bfloat16, Phase::prefill), 2048, 29);
  std::vector<std::vector<float>> extended = zero_states(in);
  const std::vector<float> out = replay_prefill(in, 0, 2048, FeatureMap::elu_plus_one, extended);
  const Accuracy accuracy = check_linear_attention_prefill(in, FeatureMap::elu_plus_one, out.data());
  EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(DType::bfloat16));
  RecordProperty("max_rel_error", std::to_string(accuracy.max_rel_error));
}

TEST(LinearAttentionTensorCore, ReplayedPrefillContinuesFromTheStateItIsGiven) {
  // Tokens [0, 100) then [100, 160) carrying [S | z | 0] (100 is not a chunk boundary) against the
  // reference over all 160 rows.
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 160, DType::bfloat16, Phase::prefill), 160, 31);
  std::vector<std::vector<float>> extended = zero_states(in);
  const std::vector<float> head = replay_prefill(in, 0, 100, FeatureMap::elu_plus_one, extended);
  const std::vector<float> tail = replay_prefill(in, 100, 60, FeatureMap::elu_plus_one, extended);
  std::vector<float> joined;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    joined.insert(joined.end(), head.begin() + bh * 100 * 64, head.begin() + (bh + 1) * 100 * 64);
    joined.insert(joined.end(), tail.begin() + bh * 60 * 64, tail.begin() + (bh + 1) * 60 * 64);
  }
  const Accuracy accuracy = check_linear_attention_prefill(in, FeatureMap::elu_plus_one, joined.data());
  EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(DType::bfloat16));
}

TEST(LinearAttentionTensorCore, ReplayWithoutTheOnesColumnWouldFailTheCheck) {
  // The normaliser is what makes the outputs an average of v: dividing by 1 instead of phi(q).z
  // (the ones column dropped) must be caught by the same check that passes above.
  const AttentionInputs in = make_attention_inputs(small_cell(1, 64, 130, DType::bfloat16, Phase::prefill), 130, 37);
  std::vector<std::vector<float>> extended = zero_states(in);
  ScalarDecayHead h = policy_operands(in, 0, 0, 130, FeatureMap::elu_plus_one);
  for (std::int64_t t = 0; t < 130; ++t) h.v[static_cast<std::size_t>(t * 80 + 64)] = 0.0f;
  const testing::ScalarDecayReplay r = testing::replay_chunk_scalar_decay(h, extended[0], kStorage);
  std::vector<float> out;
  for (std::int64_t t = 0; t < 130; ++t) {
    for (int j = 0; j < 64; ++j) out.push_back(to_bf16(r.outputs[static_cast<std::size_t>(t * 80 + j)]));
  }
  EXPECT_GT(check_linear_attention_prefill(in, FeatureMap::elu_plus_one, out.data()).max_rel_error,
            dtype_tolerance(DType::bfloat16));
}

}  // namespace
}  // namespace arch_bench
