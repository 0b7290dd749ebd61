// softmax_kv: decode and tiled prefill against each other and the fp64 reference.
#include <gtest/gtest.h>

#include "mechanisms/registry.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {
using testing::relative_max_error;
using testing::small_cell;

// Decodes the token at `length` over a cache holding tokens 0..length-1, with `splits` forced.
template <class T>
std::vector<float> decode_at(const AttentionInputs& in, std::int64_t length, int threads,
                             CpuIsa isa = cpu_isa()) {
  const std::int64_t bh = in.batch_heads, d = in.dim, capacity = length + 1;
  SoftmaxDecodePlan plan = plan_softmax_decode(bh, d, capacity, capacity, threads);
  plan.isa = isa;
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
std::vector<float> prefill_all(const AttentionInputs& in, CpuIsa isa = cpu_isa()) {
  const auto q = testing::to_storage<T>(in.q), k = testing::to_storage<T>(in.k), v = testing::to_storage<T>(in.v);
  std::vector<T> out(q.size());
  softmax_prefill(in.batch_heads, in.tokens, in.dim, q.data(), k.data(), v.data(), out.data(), isa);
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

// The kernel sets this CPU can run: each is tested, not only the one cpu_isa() picks.
std::vector<CpuIsa> runnable_isas() {
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : {CpuIsa::portable, CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_bf16}) {
    if (cpu_supports(isa)) isas.push_back(isa);
  }
  return isas;
}

// Rows t of every head of the fp64 reference over `tokens` tokens.
std::vector<float> reference_row(const AttentionInputs& in, std::int64_t t) {
  const std::vector<float> all = reference_all(in);
  std::vector<float> rows;
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    const float* row = all.data() + (h * in.tokens + t) * in.dim;
    rows.insert(rows.end(), row, row + in.dim);
  }
  return rows;
}

// Lengths off the 64-token block (and 1, a lone diagonal entry), head sizes that are not a multiple
// of the 16-channel register tile (80) or of 8 (36), or odd (33: the bf16 dot products take channel
// pairs, so it falls back), against fp64, per kernel set.
TEST(SoftmaxKv, PrefillMatchesFp64ReferenceAtEveryShapeAndKernelSet) {
  for (CpuIsa isa : runnable_isas()) {
    for (std::int64_t dim : {32, 33, 36, 64, 80, 128, 256}) {
      for (std::int64_t tokens : {1, 7, 64, 65, 130}) {
        if (dim >= 128 && tokens == 7) continue;  // keeps the suite short; 1 and 130 cover them
        const AttentionInputs f32 = make_attention_inputs(small_cell(2, dim, 0, DType::float32), tokens, 17);
        EXPECT_LT(relative_max_error(prefill_all<float>(f32, isa), reference_all(f32)), 1e-5)
            << cpu_isa_name(isa) << " dim " << dim << " tokens " << tokens;
        const AttentionInputs b16 = make_attention_inputs(small_cell(2, dim, 0, DType::bfloat16), tokens, 18);
        EXPECT_LT(relative_max_error(prefill_all<bf16>(b16, isa), reference_all(b16)),
                  dtype_tolerance(DType::bfloat16))
            << cpu_isa_name(isa) << " bf16 dim " << dim << " tokens " << tokens;
      }
    }
  }
}

// The first token attends to itself only: its output is exactly its value row (softmax of one).
TEST(SoftmaxKv, PrefillOfOneTokenReturnsItsValue) {
  for (CpuIsa isa : runnable_isas()) {
    const AttentionInputs in = make_attention_inputs(small_cell(3, 64, 0, DType::float32), 1, 4);
    const std::vector<float> out = prefill_all<float>(in, isa);
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_FLOAT_EQ(out[i], in.v[i]) << cpu_isa_name(isa);
  }
}

TEST(SoftmaxKv, DecodeMatchesFp64ReferenceAtEveryShapeAndKernelSet) {
  for (CpuIsa isa : runnable_isas()) {
    // 96 and 160: the AVX-512 kernel's 32-channel slices in threes and past 128; 80 takes the AVX2
    // kernel there (a multiple of 16, not of 32) and 36 the portable one.
    for (std::int64_t dim : {32, 36, 64, 80, 96, 128, 160, 256}) {
      for (std::int64_t length : {0, 5, 64, 333}) {  // 0: the new token alone
        const AttentionInputs f32 = make_attention_inputs(small_cell(2, dim, length, DType::float32), length + 1, 21);
        EXPECT_LT(relative_max_error(decode_at<float>(f32, length, 2, isa), reference_row(f32, length)), 1e-5)
            << cpu_isa_name(isa) << " dim " << dim << " L " << length;
        const AttentionInputs b16 = make_attention_inputs(small_cell(2, dim, length, DType::bfloat16), length + 1, 22);
        EXPECT_LT(relative_max_error(decode_at<bf16>(b16, length, 2, isa), reference_row(b16, length)),
                  dtype_tolerance(DType::bfloat16))
            << cpu_isa_name(isa) << " bf16 dim " << dim << " L " << length;
      }
    }
  }
}

// The kernel sets agree with each other far more tightly than with the reference.
TEST(SoftmaxKv, KernelSetsAgree) {
  const std::vector<CpuIsa> isas = runnable_isas();
  if (isas.size() < 2) GTEST_SKIP() << "only the portable kernels run on this CPU";
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 600, DType::float32), 601, 9);
  for (std::size_t i = 1; i < isas.size(); ++i) {
    EXPECT_LT(relative_max_error(prefill_all<float>(in, isas[i]), prefill_all<float>(in, isas[0])), 1e-5)
        << cpu_isa_name(isas[i]);
    EXPECT_LT(relative_max_error(decode_at<float>(in, 600, 4, isas[i]), decode_at<float>(in, 600, 4, isas[0])),
              1e-5)
        << cpu_isa_name(isas[i]);
  }
  // bf16 storage: only avx512_bf16 rounds anything the others do not (P, to bf16 for the dot
  // products: 2^-9 relative, unbiased), so every set stays within a few bf16 ulps of the portable one.
  const AttentionInputs b16 = make_attention_inputs(small_cell(2, 64, 600, DType::bfloat16), 601, 10);
  for (std::size_t i = 1; i < isas.size(); ++i) {
    EXPECT_LT(relative_max_error(prefill_all<bf16>(b16, isas[i]), prefill_all<bf16>(b16, isas[0])), 8e-3)
        << cpu_isa_name(isas[i]);
  }
}

// The prefill's kernel set: the bf16 dot products for bf16 storage and an even head_dim only.
TEST(SoftmaxKv, PrefillKernelSetFollowsStorageAndHeadDim) {
  for (CpuIsa asked : runnable_isas()) {
    EXPECT_EQ(softmax_prefill_isa(true, 64, asked), asked);
    EXPECT_EQ(softmax_prefill_isa(false, 64, asked), std::min(asked, CpuIsa::avx512));
    EXPECT_EQ(softmax_prefill_isa(true, 33, asked), std::min(asked, CpuIsa::avx512));
  }
}

// Which split kernel a decode plan enters: the best set at most the one asked for whose register
// layout the head_dim fits, never one the CPU lacks.
TEST(SoftmaxKv, DecodeKernelSetFollowsTheHeadDim) {
  for (CpuIsa asked : runnable_isas()) {
    for (std::int64_t dim : {36, 80, 64}) {
      SoftmaxDecodePlan plan = plan_softmax_decode(8, dim, 1024, 1024, 2);
      plan.isa = asked;
      const CpuIsa entered = softmax_decode_isa(plan);
      EXPECT_LE(entered, asked);
      EXPECT_TRUE(cpu_supports(entered));
      const CpuIsa expected = dim == 36   ? CpuIsa::portable
                              : dim == 80 ? std::min(asked, CpuIsa::avx2)
                                          : std::min(asked, CpuIsa::avx512);  // no bf16-dot decode
      EXPECT_EQ(entered, expected) << "dim " << dim << ", asked " << cpu_isa_name(asked);
    }
  }
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
