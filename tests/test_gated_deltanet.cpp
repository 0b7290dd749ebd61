// gated_deltanet: the delta rule itself (overwrite, not add), chunkwise (WY/UT) vs sequential, decode
// vs prefill, causality, kernels vs the fp64 reference, extreme gates, the prepared cells and the
// capacity probe against an additive state.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "mechanisms/capacity.hpp"
#include "mechanisms/gated_deltanet/cpu.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#include "mechanisms/gated_deltanet/reference.hpp"
#include "mechanisms/registry.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "support/causality.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/prepared_cells.hpp"
#include "support/prefill_decode_checks.hpp"

namespace arch_bench {
namespace {
using testing::relative_max_error;
using testing::small_cell;

struct Gates {
  std::vector<float> g, beta;
};

Gates drawn_gates(const AttentionInputs& in, std::uint64_t seed) {
  Cell cell = small_cell(in.batch_heads, in.dim, 0, DType::float32);
  const GatedDeltaNetGates gates = make_gated_deltanet_gates(cell, in.tokens, seed);
  return {gates.g, gates.beta};
}

Gates constant_gates(const AttentionInputs& in, float g, float beta) {
  const std::size_t n = static_cast<std::size_t>(in.batch_heads * in.tokens);
  return {std::vector<float>(n, g), std::vector<float>(n, beta)};
}

struct PrefillResult {
  std::vector<float> out, state;
};

template <class T>
PrefillResult prefill(const AttentionInputs& in, const Gates& gates, bool chunkwise) {
  const GatedDeltaNetShape shape{in.batch_heads, in.dim, in.dim};
  const auto q = testing::to_storage<T>(in.q), k = testing::to_storage<T>(in.k), v = testing::to_storage<T>(in.v);
  std::vector<T> out(q.size());
  PrefillResult r{{}, std::vector<float>(in.batch_heads * in.dim * in.dim, 0.0f)};
  if (chunkwise) {
    gated_deltanet_prefill_chunkwise(shape, in.tokens, q.data(), k.data(), v.data(), gates.g.data(), gates.beta.data(),
                                     r.state.data(), out.data());
  } else {
    gated_deltanet_prefill_recurrent(shape, in.tokens, q.data(), k.data(), v.data(), gates.g.data(), gates.beta.data(),
                                     r.state.data(), out.data());
  }
  r.out = testing::to_floats(out);
  return r;
}

std::vector<float> reference_outputs(const AttentionInputs& in, const Gates& gates) {
  std::vector<float> out;
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    const auto slice = [&](const std::vector<float>& x) {
      return std::vector<double>(x.begin() + h * in.tokens, x.begin() + (h + 1) * in.tokens);
    };
    const GatedDeltaNetResult ref =
        gated_deltanet_scan(in.head_matrix(in.q, h, in.tokens), in.head_matrix(in.k, h, in.tokens),
                            in.head_matrix(in.v, h, in.tokens), slice(gates.g), slice(gates.beta));
    out.insert(out.end(), ref.outputs.data.begin(), ref.outputs.data.end());
  }
  return out;
}

TEST(GatedDeltaNet, DrawnGatesAreDecaysAndWritingStrengthsInTheirRanges) {
  const GatedDeltaNetGates gates = make_gated_deltanet_gates(small_cell(8, 64, 0, DType::bfloat16), 4096, 3);
  double alpha_sum = 0;
  for (std::size_t i = 0; i < gates.g.size(); ++i) {
    ASSERT_LT(gates.g[i], 0.0f);
    ASSERT_GT(gates.beta[i], 0.0f);
    ASSERT_LT(gates.beta[i], 1.0f);
    alpha_sum += std::exp(gates.g[i]);
  }
  const double mean_alpha = alpha_sum / static_cast<double>(gates.g.size());
  EXPECT_GT(mean_alpha, 0.9);
  EXPECT_LT(mean_alpha, 0.995);
  // Same seed and shape, same gates.
  EXPECT_EQ(make_gated_deltanet_gates(small_cell(8, 64, 0, DType::bfloat16), 4096, 3).g, gates.g);
}

TEST(GatedDeltaNet, GateHeadRowsAreEachHeadsTokensInKernelLayout) {
  const GatedDeltaNetGates gates = make_gated_deltanet_gates(small_cell(3, 16, 0, DType::float32), 10, 5);
  for (const auto& [first, rows] : {std::pair<std::int64_t, std::int64_t>{0, 10}, {4, 3}, {9, 1}, {2, 0}}) {
    for (const std::vector<float>* x : {&gates.g, &gates.beta}) {
      const std::vector<float> picked = gates.head_rows(*x, first, rows);
      ASSERT_EQ(static_cast<std::int64_t>(picked.size()), gates.batch_heads * rows);
      for (std::int64_t bh = 0; bh < gates.batch_heads; ++bh) {
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::size_t drawn = static_cast<std::size_t>(bh * gates.tokens + first + r);
          EXPECT_EQ(picked[static_cast<std::size_t>(bh * rows + r)], (*x)[drawn]) << bh << " " << first + r;
        }
      }
    }
  }
}

TEST(GatedDeltaNet, SameKeyWrittenTwiceReturnsTheSecondValueNotTheSum) {
  // alpha = 1, beta = 1, one unit key: the delta rule replaces v1 by v2; an additive rule (the seed's
  // "simplified" version, or linear attention's S) would return v1 + v2.
  const std::int64_t d = 8;
  std::vector<double> key(d), v1(d), v2(d);
  for (std::int64_t i = 0; i < d; ++i) {
    key[i] = std::cos(0.7 * i) / 2.0;
    v1[i] = 1.0 + i;
    v2[i] = std::sin(1.3 * i) - 0.5;
  }
  double norm = 0;
  for (double x : key) norm += x * x;
  for (double& x : key) x /= std::sqrt(norm);
  MatrixD state(d, d);
  gated_delta_rule_write(state, key.data(), v1.data(), 1.0, 1.0);
  gated_delta_rule_write(state, key.data(), v2.data(), 1.0, 1.0);
  for (std::int64_t j = 0; j < d; ++j) {
    double read = 0;
    for (std::int64_t i = 0; i < d; ++i) read += key[i] * state(i, j);
    EXPECT_NEAR(read, v2[j], 1e-12) << j;
    EXPECT_GT(std::fabs(read - (v1[j] + v2[j])), 0.5) << j;
  }
  // The fp32 decode kernel does the same (its query is normalised and scaled by d^-1/2).
  const GatedDeltaNetShape shape{1, d, d};
  std::vector<float> k32(key.begin(), key.end()), state32(d * d, 0.0f), out(d);
  const float g = 0.0f, beta = 1.0f;
  for (const std::vector<double>* v : {&v1, &v2}) {
    const std::vector<float> v32(v->begin(), v->end());
    gated_deltanet_decode_step(shape, k32.data(), k32.data(), v32.data(), &g, &beta, state32.data(), out.data());
  }
  for (std::int64_t j = 0; j < d; ++j) EXPECT_NEAR(out[j] * std::sqrt(double(d)), v2[j], 1e-5) << j;
}

TEST(GatedDeltaNet, ChunkwiseEqualsSequentialPrefillOutputsAndStates) {
  // 200 tokens: three full chunks of 64 and a partial one; head_dim 48 exercises the narrow column
  // tails of the matrix products.
  for (std::int64_t dim : {32, 48}) {
    const AttentionInputs in = make_attention_inputs(small_cell(3, dim, 0, DType::float32), 200, 21);
    const Gates gates = drawn_gates(in, 21);
    SCOPED_TRACE(dim);
    testing::expect_chunkwise_equals_recurrent([&](bool chunkwise) { return prefill<float>(in, gates, chunkwise); });
  }
}

TEST(GatedDeltaNet, ChunkwiseMatchesFp64ReferenceFloat32) {
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 0, DType::float32), 300, 22);
  const Gates gates = drawn_gates(in, 22);
  EXPECT_LT(relative_max_error(prefill<float>(in, gates, true).out, reference_outputs(in, gates)), 1e-5);
}

TEST(GatedDeltaNet, Bfloat16StaysWithinToleranceOfFp64) {
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 0, DType::bfloat16), 1000, 23);
  const Gates gates = drawn_gates(in, 23);
  testing::expect_bf16_prefills_within_tolerance(prefill<bf16>(in, gates, true).out, prefill<bf16>(in, gates, false).out,
                                                 reference_outputs(in, gates));
}

TEST(GatedDeltaNet, DecodeAtPositionTEqualsRowTOfPrefill) {
  // Widths that take every path of the state pass (state_pass.hpp): slices of four wide
  // vectors (64), a float8 after them (72 with AVX-512), and scalar columns (100 = 96 + 4).
  testing::expect_decode_at_position_t_equals_row_t_of_prefill(
      {32, 64, 72, 100}, [](const AttentionInputs& in) { return prefill<float>(in, drawn_gates(in, 31), true); },
      [](const AttentionInputs& in, std::int64_t t, const testing::DecodeToken& token) {
        // The gates of tokens [0, t) for the context's prefill, and token t's for the decode step.
        const Gates gates = drawn_gates(in, 31);
        Gates context_gates;
        std::vector<float> g, beta;
        for (std::int64_t h = 0; h < in.batch_heads; ++h) {
          const std::int64_t first = h * in.tokens;
          context_gates.g.insert(context_gates.g.end(), gates.g.begin() + first, gates.g.begin() + first + t);
          context_gates.beta.insert(context_gates.beta.end(), gates.beta.begin() + first,
                                    gates.beta.begin() + first + t);
          g.push_back(gates.g[first + t]);
          beta.push_back(gates.beta[first + t]);
        }
        PrefillResult context = prefill<float>(testing::first_tokens(in, t), context_gates, true);
        const GatedDeltaNetShape shape{in.batch_heads, in.dim, in.dim};
        std::vector<float> out(in.batch_heads * in.dim);
        gated_deltanet_decode_step(shape, token.q.data(), token.k.data(), token.v.data(), g.data(), beta.data(),
                                   context.state.data(), out.data());
        return PrefillResult{out, context.state};
      });
}

TEST(GatedDeltaNet, ChangingTokenJLeavesEarlierOutputsUnchanged) {
  const std::int64_t tokens = 150, j = 97;
  const AttentionInputs in = make_attention_inputs(small_cell(2, 32, 0, DType::float32), tokens, 32);
  const Gates gates = drawn_gates(in, 32);
  AttentionInputs changed = in;
  Gates changed_gates = gates;
  testing::change_token(changed, j);
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    changed_gates.g[h * tokens + j] = -2.0f;
    changed_gates.beta[h * tokens + j] = 0.99f;
  }
  const PrefillResult a = prefill<float>(in, gates, true), b = prefill<float>(changed, changed_gates, true);
  testing::expect_changed_from_token(a.out, b.out, in, j);
}

TEST(GatedDeltaNet, FiniteAtL8192WithDecaysNearZeroAndNearOne) {
  // alpha = exp(-1e-6) (remembers ~10^6 tokens), exp(-20) (forgets every step), and beta near 1.
  for (float g : {-1e-6f, -20.0f}) {
    const AttentionInputs in = make_attention_inputs(small_cell(1, 32, 0, DType::float32), 8192, 33);
    const Gates gates = constant_gates(in, g, 0.999f);
    const PrefillResult r = prefill<float>(in, gates, true);
    SCOPED_TRACE(g);
    testing::expect_finite_with_accurate_last_rows(r.out, r.state, reference_outputs(in, gates), 32);
  }
}

// One fp32 d x d state per head (the contract every mechanism meets is in test_mechanism_contract.cpp).
TEST(GatedDeltaNet, StateIsOneFp32MatrixPerHead) {
  const Mechanism* gdn = find_mechanism("gated_deltanet");
  ASSERT_NE(gdn, nullptr);
  EXPECT_EQ(gdn->state_bytes(small_cell(8, 64, 8192, DType::bfloat16)), 8 * 64 * 64 * 4);
}

// Mean relative L2 error of `read` against `values`, over rows.
double mean_relative_error(const MatrixD& read, const MatrixD& values) {
  double sum = 0;
  for (std::int64_t i = 0; i < values.rows; ++i) {
    double diff = 0, norm = 0;
    for (std::int64_t j = 0; j < values.cols; ++j) {
      diff += (read(i, j) - values(i, j)) * (read(i, j) - values(i, j));
      norm += values(i, j) * values(i, j);
    }
    sum += std::sqrt(diff / norm);
  }
  return sum / static_cast<double>(values.rows);
}

// Linear attention's additive state with its elu+1 feature map, read the same way: S = sum phi(k_i)
// v_i^T, z = sum phi(k_i), row i = phi(k_i)^T S / phi(k_i)^T z.
MatrixD additive_linear_attention_recall(const MatrixD& keys, const MatrixD& values) {
  const auto phi = [](double x) { return x > 0 ? x + 1 : std::exp(x); };
  MatrixD state(keys.cols, values.cols), read(keys.rows, values.cols);
  std::vector<double> z(static_cast<std::size_t>(keys.cols), 0.0);
  for (std::int64_t t = 0; t < keys.rows; ++t) {
    for (std::int64_t i = 0; i < keys.cols; ++i) {
      z[i] += phi(keys(t, i));
      for (std::int64_t j = 0; j < values.cols; ++j) state(i, j) += phi(keys(t, i)) * values(t, j);
    }
  }
  for (std::int64_t t = 0; t < keys.rows; ++t) {
    double denominator = 0;
    for (std::int64_t i = 0; i < keys.cols; ++i) denominator += phi(keys(t, i)) * z[i];
    for (std::int64_t i = 0; i < keys.cols; ++i) {
      for (std::int64_t j = 0; j < values.cols; ++j) read(t, j) += phi(keys(t, i)) * state(i, j) / denominator;
    }
  }
  return read;
}

// n orthonormal keys in R^d (Gram-Schmidt on Gaussian draws) and N(0, 1) values.
std::pair<MatrixD, MatrixD> orthonormal_pairs(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  MatrixD keys(n, d), values(n, d);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t c = 0; c < d; ++c) keys(i, c) = normal(rng), values(i, c) = normal(rng);
    for (int pass = 0; pass < 2; ++pass) {
      for (std::int64_t j = 0; j < i; ++j) {
        double dot = 0;
        for (std::int64_t c = 0; c < d; ++c) dot += keys(i, c) * keys(j, c);
        for (std::int64_t c = 0; c < d; ++c) keys(i, c) -= dot * keys(j, c);
      }
    }
    double norm = 0;
    for (std::int64_t c = 0; c < d; ++c) norm += keys(i, c) * keys(i, c);
    for (std::int64_t c = 0; c < d; ++c) keys(i, c) /= std::sqrt(norm);
  }
  return {keys, values};
}

TEST(GatedDeltaNet, CapacityOrthogonalKeysAreRecalledExactlyUpToDkWhereAdditiveLinearAttentionIsNot) {
  const Mechanism* gdn = find_mechanism("gated_deltanet");
  ASSERT_NE(gdn, nullptr);
  const CapacityProbe* probe = gdn->capacity_probe(MechanismOptions{});
  ASSERT_NE(probe, nullptr);
  EXPECT_NE(probe->setting().find("alpha = 1, beta = 1"), std::string::npos);
  const std::int64_t d = 32;
  for (std::int64_t n : {8, 16, 32}) {
    const auto [keys, values] = orthonormal_pairs(n, d, 100 + n);
    EXPECT_LT(mean_relative_error(probe->recall(keys, values), values), 1e-5) << n;
    EXPECT_GT(mean_relative_error(additive_linear_attention_recall(keys, values), values), 0.5) << n;
  }
  // Past n = dk the keys cannot all be orthogonal: random unit keys, 4 x dk of them, are recalled
  // only in part (the newest overwrite directions the oldest shared), but not as noise.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  const std::int64_t n = 4 * d;
  MatrixD keys(n, d), values(n, d);
  for (std::int64_t i = 0; i < n; ++i) {
    double norm = 0;
    for (std::int64_t c = 0; c < d; ++c) keys(i, c) = normal(rng), values(i, c) = normal(rng), norm += keys(i, c) * keys(i, c);
    for (std::int64_t c = 0; c < d; ++c) keys(i, c) /= std::sqrt(norm);
  }
  const double error = mean_relative_error(probe->recall(keys, values), values);
  EXPECT_GT(error, 0.1);
  EXPECT_LT(error, 1.5);
}

}  // namespace
}  // namespace arch_bench
