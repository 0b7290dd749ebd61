// softmax_kv: decode and tiled prefill against each other and the fp64 reference.
#include <gtest/gtest.h>

#include "mechanisms/registry.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "runner/backends/cpu/cpu_backend.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {
using testing::relative_max_error;
using testing::small_cell;

// Decodes the token at `length` over a cache holding tokens 0..length-1, with `splits` forced.
template <class T>
std::vector<float> decode_at(const AttentionInputs& in, std::int64_t length, int threads) {
  const std::int64_t bh = in.batch_heads, d = in.dim, capacity = length + 1;
  const SoftmaxDecodePlan plan = plan_softmax_decode(bh, d, capacity, capacity, threads);
  std::vector<T> k_cache(bh * capacity * d), v_cache(k_cache.size()), q(bh * d), k_new(bh * d), v_new(bh * d),
      out(bh * d);
  for (std::int64_t h = 0; h < bh; ++h) {
    store(in.k_at(h, 0), length * d, k_cache.data() + h * capacity * d);
    store(in.v_at(h, 0), length * d, v_cache.data() + h * capacity * d);
    store(in.q_at(h, length), d, q.data() + h * d);
    store(in.k_at(h, length), d, k_new.data() + h * d);
    store(in.v_at(h, length), d, v_new.data() + h * d);
  }
  std::vector<float> workspace(plan.workspace_floats());
  softmax_decode_step(plan, q.data(), k_new.data(), v_new.data(), k_cache.data(), v_cache.data(), length,
                      workspace.data(), out.data());
  return testing::to_floats(out);
}

template <class T>
std::vector<float> prefill_all(const AttentionInputs& in) {
  const auto q = testing::to_storage<T>(in.q), k = testing::to_storage<T>(in.k), v = testing::to_storage<T>(in.v);
  std::vector<T> out(q.size());
  softmax_prefill(in.batch_heads, in.tokens, in.dim, q.data(), k.data(), v.data(), out.data());
  return testing::to_floats(out);
}

std::vector<float> reference_all(const AttentionInputs& in) {
  std::vector<float> out;
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    const MatrixD ref = softmax_attention_reference(in.head_matrix(in.q, h, in.tokens),
                                                    in.head_matrix(in.k, h, in.tokens),
                                                    in.head_matrix(in.v, h, in.tokens));
    out.insert(out.end(), ref.data.begin(), ref.data.end());
  }
  return out;
}

TEST(SoftmaxKv, PrefillMatchesFp64ReferenceFloat32) {
  const AttentionInputs in = make_attention_inputs(small_cell(2, 32, 0, DType::float32), 150, 7);
  EXPECT_LT(relative_max_error(prefill_all<float>(in), reference_all(in)), 1e-5);
}

TEST(SoftmaxKv, PrefillMatchesFp64ReferenceBfloat16WithinTolerance) {
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 0, DType::bfloat16), 150, 8);
  const double error = relative_max_error(prefill_all<bf16>(in), reference_all(in));
  EXPECT_LT(error, dtype_tolerance(DType::bfloat16));
  EXPECT_GT(error, 1e-6);  // bf16 outputs really are rounded: the comparison is not vacuous
}

TEST(SoftmaxKv, DecodeAtLEqualsLastRowOfPrefillOverLPlusOneTokens) {
  const std::int64_t length = 700;  // several key blocks and a partial one
  const AttentionInputs in = make_attention_inputs(small_cell(3, 32, length, DType::float32), length + 1, 3);
  const std::vector<float> decoded = decode_at<float>(in, length, 1);
  const std::vector<float> prefill = prefill_all<float>(in);
  std::vector<float> last_rows;
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    const float* row = prefill.data() + (h * in.tokens + length) * in.dim;
    last_rows.insert(last_rows.end(), row, row + in.dim);
  }
  EXPECT_LT(relative_max_error(decoded, last_rows), 1e-5);
}

TEST(SoftmaxKv, SplitContextDecodeEqualsUnsplit) {
  const std::int64_t length = 2000;
  const AttentionInputs in = make_attention_inputs(small_cell(1, 64, length, DType::float32), length + 1, 5);
  ASSERT_GT(plan_softmax_decode(1, 64, length + 1, length + 1, 4).splits, 1);  // really split
  EXPECT_LT(relative_max_error(decode_at<float>(in, length, 4), decode_at<float>(in, length, 1)), 1e-5);
}

TEST(SoftmaxKv, ReferenceIsStableForHugeScores) {
  MatrixD q(2, 2), k(2, 2), v(2, 1);
  q.data = {1000, 1000, -1000, 1000};
  k.data = {1000, 0, 0, 1000};
  v.data = {1, 3};
  const MatrixD out = softmax_attention_reference(q, k, v);
  for (double x : out.data) EXPECT_TRUE(std::isfinite(x));
  EXPECT_NEAR(out(1, 0), 3.0, 1e-9);  // q1.k1 dominates completely
}

TEST(SoftmaxKv, StateBytesReproduceTheSeedFigures) {
  const Mechanism* softmax = find_mechanism("softmax_kv");
  ASSERT_NE(softmax, nullptr);
  Cell cell = small_cell(8, 64, 512, DType::bfloat16);
  EXPECT_EQ(softmax->state_bytes(cell), 1 << 20);  // 1 MiB at L=512
  cell.sequence_length = 8192;
  EXPECT_EQ(softmax->state_bytes(cell), 16 << 20);  // 16 MiB at L=8192
}

TEST(SoftmaxKv, PreparedCellsPassTheirChecksAndDecodeIsRepeatable) {
  const Mechanism* softmax = find_mechanism("softmax_kv");
  CpuBackend backend;
  for (DType dtype : {DType::float32, DType::bfloat16}) {
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      Cell cell = small_cell(2, 64, 300, dtype, phase);
      cell.mechanism = "softmax_kv";
      auto prepared = softmax->prepare(cell, 11, backend);
      prepared->run();
      const Accuracy first = prepared->check();
      EXPECT_TRUE(first.output_finite);
      EXPECT_LT(first.max_rel_error, dtype_tolerance(dtype)) << dtype_name(dtype) << " " << phase_name(phase);
      EXPECT_GT(first.rows_checked, 0);
      prepared->run();  // a repeated sample does the same work and leaves the same output
      EXPECT_EQ(prepared->check().max_abs_error, first.max_abs_error);
      EXPECT_GE(backend.allocator().peak_bytes(), softmax->state_bytes(cell));
    }
  }
}

}  // namespace
}  // namespace arch_bench
