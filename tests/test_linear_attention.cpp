// linear_attention: recurrent vs chunkwise, decode vs prefill, kernels vs the fp64 reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mechanisms/linear_attention/cpu.hpp"
#include "mechanisms/linear_attention/reference.hpp"
#include "mechanisms/registry.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/prepared_cells.hpp"
#include "support/prefill_decode_checks.hpp"

namespace arch_bench {
namespace {
using testing::relative_max_error;
using testing::small_cell;

struct PrefillResult {
  std::vector<float> out, state, normalizer;
};

template <class T>
PrefillResult prefill(const AttentionInputs& in, FeatureMap map, bool chunkwise) {
  const LinearAttentionShape shape{in.batch_heads, in.dim, in.dim, map};
  const auto q = testing::to_storage<T>(in.q), k = testing::to_storage<T>(in.k), v = testing::to_storage<T>(in.v);
  std::vector<T> out(q.size());
  PrefillResult r{{}, std::vector<float>(in.batch_heads * in.dim * in.dim, 0.0f),
                  std::vector<float>(in.batch_heads * in.dim, 0.0f)};
  if (chunkwise) {
    linear_attention_prefill_chunkwise(shape, in.tokens, q.data(), k.data(), v.data(), r.state.data(),
                                       r.normalizer.data(), out.data());
  } else {
    linear_attention_prefill_recurrent(shape, in.tokens, q.data(), k.data(), v.data(), r.state.data(),
                                       r.normalizer.data(), out.data());
  }
  r.out = testing::to_floats(out);
  return r;
}

std::vector<float> reference_outputs(const AttentionInputs& in, FeatureMap map) {
  std::vector<float> out;
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    const LinearAttentionResult ref =
        linear_attention_scan(in.head_matrix(in.q, h, in.tokens), in.head_matrix(in.k, h, in.tokens),
                              in.head_matrix(in.v, h, in.tokens), map);
    out.insert(out.end(), ref.outputs.data.begin(), ref.outputs.data.end());
  }
  return out;
}

class LinearAttentionMaps : public ::testing::TestWithParam<FeatureMap> {};

TEST_P(LinearAttentionMaps, RecurrentEqualsChunkwisePrefillOutputsAndStates) {
  // 200 tokens: three full chunks of 64 and a partial one.
  const AttentionInputs in = make_attention_inputs(small_cell(2, 32, 0, DType::float32), 200, 21);
  const auto run = [&](bool chunkwise) { return prefill<float>(in, GetParam(), chunkwise); };
  testing::expect_chunkwise_equals_recurrent(run);
  EXPECT_LT(relative_max_error(run(true).normalizer, run(false).normalizer), 1e-5);  // and the same z
}

TEST_P(LinearAttentionMaps, ChunkwiseMatchesFp64ReferenceFloat32) {
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 0, DType::float32), 300, 22);
  EXPECT_LT(relative_max_error(prefill<float>(in, GetParam(), true).out, reference_outputs(in, GetParam())), 1e-5);
}

TEST_P(LinearAttentionMaps, Bfloat16StaysWithinToleranceOfFp64) {
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 0, DType::bfloat16), 1000, 23);
  testing::expect_bf16_prefills_within_tolerance(prefill<bf16>(in, GetParam(), true).out,
                                                 prefill<bf16>(in, GetParam(), false).out,
                                                 reference_outputs(in, GetParam()));
}

TEST_P(LinearAttentionMaps, ChunkwiseHandlesPartialChunksAndNarrowHeads) {
  // Length 1 and lengths either side of a chunk boundary; head widths that are not a multiple of the
  // register tile (20: a scalar column tail; 24: one-vector tiles on AVX2; 40: mixed).
  for (std::int64_t dim : {20, 24, 40}) {
    for (std::int64_t length : {1, 63, 64, 65, 129}) {
      const AttentionInputs in = make_attention_inputs(small_cell(2, dim, 0, DType::float32), length, 24);
      const PrefillResult chunked = prefill<float>(in, GetParam(), true);
      const PrefillResult recurrent = prefill<float>(in, GetParam(), false);
      EXPECT_LT(relative_max_error(chunked.out, reference_outputs(in, GetParam())), 1e-5) << dim << " " << length;
      EXPECT_LT(relative_max_error(chunked.out, recurrent.out), 1e-5) << dim << " " << length;
      EXPECT_LT(relative_max_error(chunked.state, recurrent.state), 1e-5) << dim << " " << length;
      EXPECT_LT(relative_max_error(chunked.normalizer, recurrent.normalizer), 1e-5) << dim << " " << length;
    }
  }
}

// The recurrent prefill fuses tokens in pairs (one pass over the state per pair); the fusion keeps
// every operation of two single-token steps in order, so its outputs and states are bitwise those of
// the decode step applied token by token, at odd lengths (a single-token tail) and at head widths
// that take the two-vector, one-vector and scalar column paths.
TEST_P(LinearAttentionMaps, RecurrentPrefillIsBitwiseTheDecodeStepTokenByToken) {
  for (const std::int64_t dim : {20, 24, 40, 64}) {
    const std::int64_t length = 7;
    const AttentionInputs in = make_attention_inputs(small_cell(2, dim, 0, DType::float32), length, 26);
    const PrefillResult prefilled = prefill<float>(in, GetParam(), false);
    const LinearAttentionShape shape{in.batch_heads, dim, dim, GetParam()};
    std::vector<float> state(in.batch_heads * dim * dim, 0.0f), normalizer(in.batch_heads * dim, 0.0f);
    std::vector<float> out(in.q.size());
    std::vector<float> q(in.batch_heads * dim), k(q.size()), v(q.size()), o(q.size());
    for (std::int64_t t = 0; t < length; ++t) {
      for (std::int64_t h = 0; h < in.batch_heads; ++h) {
        const std::int64_t row = (h * length + t) * dim;
        std::copy_n(in.q.begin() + row, dim, q.begin() + h * dim);
        std::copy_n(in.k.begin() + row, dim, k.begin() + h * dim);
        std::copy_n(in.v.begin() + row, dim, v.begin() + h * dim);
      }
      linear_attention_decode_step(shape, q.data(), k.data(), v.data(), state.data(), normalizer.data(), o.data());
      for (std::int64_t h = 0; h < in.batch_heads; ++h) std::copy_n(o.begin() + h * dim, dim, out.begin() + (h * length + t) * dim);
    }
    EXPECT_EQ(out, prefilled.out) << "dim " << dim;
    EXPECT_EQ(state, prefilled.state) << "dim " << dim;
    EXPECT_EQ(normalizer, prefilled.normalizer) << "dim " << dim;
  }
}

// A NaN in q reaches its token's outputs, and only those, in every path: a vector lane and a
// scalar-tail element of the feature map (d = 20), both maps, the decode step and both prefill forms.
// The compare-and-select map once turned a NaN into phi = 1, and the output stayed finite.
TEST_P(LinearAttentionMaps, ANanInTheQueryReachesThatTokensOutputs) {
  const std::int64_t dim = 20, length = 4, poisoned = 1;
  for (const std::int64_t element : {3, 18}) {
    AttentionInputs in = make_attention_inputs(small_cell(2, dim, 0, DType::float32), length, 27);
    in.q[poisoned * dim + element] = std::numeric_limits<float>::quiet_NaN();  // head 0, token 1
    for (const bool chunkwise : {false, true}) {
      const PrefillResult r = prefill<float>(in, GetParam(), chunkwise);
      for (std::int64_t h = 0; h < in.batch_heads; ++h) {
        for (std::int64_t t = 0; t < length; ++t) {
          for (std::int64_t j = 0; j < dim; ++j) {
            const float value = r.out[(h * length + t) * dim + j];
            if (h == 0 && t == poisoned) {
              EXPECT_TRUE(std::isnan(value)) << "element " << element << " chunkwise " << chunkwise << " j " << j;
            } else {
              EXPECT_TRUE(std::isfinite(value)) << "element " << element << " chunkwise " << chunkwise << " h " << h << " t " << t;
            }
          }
        }
      }
    }
    const LinearAttentionShape shape{1, dim, dim, GetParam()};
    std::vector<float> state(dim * dim, 0.0f), normalizer(dim, 0.0f), out(dim);
    linear_attention_decode_step(shape, in.q_at(0, poisoned), in.k_at(0, 0), in.v_at(0, 0), state.data(),
                                 normalizer.data(), out.data());
    for (const float value : out) EXPECT_TRUE(std::isnan(value)) << "decode, element " << element;
  }
}

INSTANTIATE_TEST_SUITE_P(FeatureMaps, LinearAttentionMaps,
                         ::testing::Values(FeatureMap::elu_plus_one, FeatureMap::relu_plus_one),
                         [](const ::testing::TestParamInfo<FeatureMap>& info) { return feature_map_name(info.param); });

// The prefill the mechanism runs takes the recurrence while a head's state fits L1 (d = 64: the same
// bits as linear_attention_prefill_recurrent) and the chunk form beyond (d = 72: chunkwise's bits);
// either way it matches the fp64 reference.
TEST(LinearAttention, PrefillTakesTheRecurrenceUpToD64AndTheChunkFormBeyond) {
  for (const std::int64_t dim : {64, 72}) {
    const AttentionInputs in = make_attention_inputs(small_cell(2, dim, 0, DType::float32), 130, 25);
    const LinearAttentionShape shape{in.batch_heads, in.dim, in.dim, FeatureMap::elu_plus_one};
    std::vector<float> out(in.q.size()), state(in.batch_heads * dim * dim, 0.0f), normalizer(in.batch_heads * dim, 0.0f);
    linear_attention_prefill(shape, in.tokens, in.q.data(), in.k.data(), in.v.data(), state.data(), normalizer.data(),
                             out.data());
    const PrefillResult expected = prefill<float>(in, FeatureMap::elu_plus_one, /*chunkwise=*/dim > 64);
    EXPECT_EQ(out, expected.out) << "dim " << dim;
    EXPECT_EQ(state, expected.state) << "dim " << dim;
    EXPECT_LT(relative_max_error(out, reference_outputs(in, FeatureMap::elu_plus_one)), 1e-5) << "dim " << dim;
  }
}

TEST(LinearAttention, DecodeAtPositionTEqualsRowTOfPrefill) {
  testing::expect_decode_at_position_t_equals_row_t_of_prefill(
      {32}, [](const AttentionInputs& in) { return prefill<float>(in, FeatureMap::elu_plus_one, true); },
      [](const AttentionInputs& in, std::int64_t t, const testing::DecodeToken& token) {
        PrefillResult context = prefill<float>(testing::first_tokens(in, t), FeatureMap::elu_plus_one, true);
        const LinearAttentionShape shape{in.batch_heads, in.dim, in.dim, FeatureMap::elu_plus_one};
        std::vector<float> out(in.batch_heads * in.dim);
        linear_attention_decode_step(shape, token.q.data(), token.k.data(), token.v.data(), context.state.data(),
                                     context.normalizer.data(), out.data());
        return PrefillResult{out, context.state, context.normalizer};
      });
}

TEST(LinearAttention, PrefillContinuesFromCarriedState) {
  const AttentionInputs in = make_attention_inputs(small_cell(1, 16, 0, DType::float32), 160, 41);
  const PrefillResult whole = prefill<float>(in, FeatureMap::elu_plus_one, true);
  // Same tokens in two calls: [0, 100) then [100, 160), carrying (S, z).
  const LinearAttentionShape shape{1, 16, 16, FeatureMap::elu_plus_one};
  std::vector<float> state(256, 0.0f), z(16, 0.0f), out(160 * 16);
  linear_attention_prefill_chunkwise(shape, 100, in.q.data(), in.k.data(), in.v.data(), state.data(), z.data(),
                                     out.data());
  linear_attention_prefill_chunkwise(shape, 60, in.q.data() + 1600, in.k.data() + 1600, in.v.data() + 1600,
                                     state.data(), z.data(), out.data() + 1600);
  EXPECT_LT(relative_max_error(out, whole.out), 1e-5);
}

TEST(LinearAttention, StateBytesAreFixedAcrossLengths) {
  const Mechanism* linear = find_mechanism("linear_attention");
  ASSERT_NE(linear, nullptr);
  Cell cell = small_cell(8, 64, 512, DType::bfloat16);
  const std::int64_t at_512 = linear->state_bytes(cell);
  cell.sequence_length = 8192;
  EXPECT_EQ(linear->state_bytes(cell), at_512);
  EXPECT_EQ(at_512, 8 * (64 * 64 + 64) * 4);  // fp32 S and z per head
}

TEST(LinearAttention, DecodeStepAllocatesNothingAndPassesItsCheck) {
  const Mechanism* linear = find_mechanism("linear_attention");
  CpuBackend backend;
  for (DType dtype : {DType::float32, DType::bfloat16}) {
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      Cell cell = small_cell(4, 64, 257, dtype, phase);
      cell.mechanism = "linear_attention";
      const testing::PreparedRun run = testing::run_prepared(*linear, cell, 5, backend);
      EXPECT_EQ(run.run_allocations, 0);
      const Accuracy& accuracy = run.accuracy;
      EXPECT_TRUE(accuracy.output_finite);
      EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(dtype)) << dtype_name(dtype) << " " << phase_name(phase);
    }
  }
}

}  // namespace
}  // namespace arch_bench
