// The chunkwise delta-rule prefill's arithmetic (mechanisms/common/chunk_delta_rule.cuh) replayed on
// the CPU, as the two kernels do it: the same chunking and zero padding, the same value tiles of the
// pass, fp32 accumulation of every product, and each tensor-core operand rounded to bf16 where the
// kernels round it (normalised Q and K, the decayed Q~, K~ and diag(exp(b)) K, T, W, U, P, V' and S
// as an operand). Checked against Gated DeltaNet's fp64 sequential reference: the outputs at L
// around and not a multiple of the 64-token chunk, several head sizes, the final state, and a
// prefill that continues from a carried state. Without a GPU this is the evidence that the algebra
// and the rounding the kernels use meet bf16's tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/chunk_delta_rule_plan.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/gated_deltanet/check.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

using testing::mechanism_cell;

constexpr int kC = kDeltaRuleChunk;

float bf(float x) { return round_through<bf16>(x); }

// One head's tokens [first, first + tokens) of the cell's inputs.
struct HeadInputs {
  const AttentionInputs& in;
  const GatedDeltaNetGates& gates;
  std::int64_t bh;
  std::int64_t first;
  float q(std::int64_t t, int i) const { return in.q_at(bh, first + t)[i]; }
  float k(std::int64_t t, int i) const { return in.k_at(bh, first + t)[i]; }
  float v(std::int64_t t, int j) const { return in.v_at(bh, first + t)[j]; }
  float g(std::int64_t t) const { return *gates.g_at(bh, first + t); }
  float beta(std::int64_t t) const { return *gates.beta_at(bh, first + t); }
};

// What kernel (1) leaves in the workspace for one chunk: bf16 values widened back to float.
struct ChunkWork {
  std::vector<float> w, k_decayed, q_decayed;  // [C][dk]
  std::vector<float> p;                        // [C][C]
  std::vector<float> u;                        // [C][dv]
  float b_last = 0;
};

// x * scale / sqrt(x.x + eps) in fp32, the factor first, as the kernels (and the CPU kernels) do.
std::vector<float> normalised(const HeadInputs& x, bool query, std::int64_t t, int d) {
  std::vector<float> row(static_cast<std::size_t>(d));
  float sum = 0.0f;
  for (int i = 0; i < d; ++i) {
    row[i] = query ? x.q(t, i) : x.k(t, i);
    sum += row[i] * row[i];
  }
  const float scale = query ? 1.0f / std::sqrt(static_cast<float>(d)) : 1.0f;
  const float factor = scale / std::sqrt(sum + static_cast<float>(kGatedDeltaNetNormEps));
  for (float& value : row) value *= factor;
  return row;
}

// Kernel (1) for chunk `chunk` of a head.
ChunkWork prepare_chunk(const ChunkDeltaRulePlan& plan, const HeadInputs& x, std::int64_t chunk) {
  const int dk = plan.dk, dv = plan.dv;
  const int rows = delta_rule_chunk_rows(plan.tokens, chunk);
  const std::int64_t first = chunk * kC;
  std::vector<float> b(kC), beta(kC, 0.0f);
  float running = 0.0f;
  for (int m = 0; m < kC; ++m) {
    if (m < rows) running += x.g(first + m);  // flat past the sequence
    b[m] = running;
    if (m < rows) beta[m] = x.beta(first + m);
  }
  ChunkWork work;
  work.b_last = b[kC - 1];
  std::vector<float> q(kC * dk, 0.0f), k(kC * dk, 0.0f), k_scaled(kC * dk, 0.0f), v(kC * dv, 0.0f);
  work.q_decayed.assign(kC * dk, 0.0f);
  work.k_decayed.assign(kC * dk, 0.0f);
  for (int m = 0; m < rows; ++m) {
    const std::vector<float> qn = normalised(x, true, first + m, dk), kn = normalised(x, false, first + m, dk);
    for (int i = 0; i < dk; ++i) {
      q[m * dk + i] = bf(qn[i]);
      k[m * dk + i] = bf(kn[i]);
      k_scaled[m * dk + i] = bf(kn[i] * std::exp(b[m]));
      work.q_decayed[m * dk + i] = bf(qn[i] * std::exp(b[m]));
      work.k_decayed[m * dk + i] = bf(kn[i] * std::exp(work.b_last - b[m]));
    }
    for (int j = 0; j < dv; ++j) v[m * dv + j] = x.v(first + m, j);
  }
  const auto dot = [dk](const std::vector<float>& a, int i, const std::vector<float>& c, int j) {
    float sum = 0.0f;
    for (int r = 0; r < dk; ++r) sum += a[i * dk + r] * c[j * dk + r];
    return sum;
  };
  // A (fp32, strictly lower) and P (bf16, lower with the diagonal).
  std::vector<float> a(kC * kC, 0.0f);
  work.p.assign(kC * kC, 0.0f);
  for (int i = 0; i < kC; ++i) {
    for (int j = 0; j <= i; ++j) {
      const float gamma = std::exp(b[i] - b[j]);
      if (j < i) a[i * kC + j] = beta[i] * dot(k, i, k, j) * gamma;
      work.p[i * kC + j] = bf(dot(q, i, k, j) * gamma);
    }
  }
  // T = (I + A)^-1 diag(beta): column c of X = (I + A)^-1 by forward substitution, in fp32.
  std::vector<float> t(kC * kC, 0.0f);
  for (int c = 0; c < kC; ++c) {
    std::vector<float> column(kC, 0.0f);
    for (int i = 0; i < kC; ++i) {
      float value = i == c ? 1.0f : 0.0f;
      for (int j = 0; j < i; ++j) value -= a[i * kC + j] * column[j];
      column[i] = value;
      t[i * kC + c] = bf(value * beta[c]);
    }
  }
  work.w.assign(kC * dk, 0.0f);
  work.u.assign(kC * dv, 0.0f);
  for (int i = 0; i < kC; ++i) {
    for (int r = 0; r < dk; ++r) {
      float sum = 0.0f;
      for (int m = 0; m <= i; ++m) sum += t[i * kC + m] * k_scaled[m * dk + r];
      work.w[i * dk + r] = bf(sum);
    }
    for (int j = 0; j < dv; ++j) {
      float sum = 0.0f;
      for (int m = 0; m <= i; ++m) sum += t[i * kC + m] * v[m * dv + j];
      work.u[i * dv + j] = bf(sum);
    }
  }
  return work;
}

// Kernel (2) for one head: each value tile walks the chunks with its columns of S (fp32). `state`
// [dk][dv] carries in and out; out [tokens][dv] receives bf16-rounded outputs.
void pass_head(const ChunkDeltaRulePlan& plan, const std::vector<ChunkWork>& work, std::vector<float>& state,
               std::vector<float>& out) {
  const int dk = plan.dk, dv = plan.dv, n = plan.value_tile;
  for (int tile = 0; tile < plan.value_tiles; ++tile) {
    const int j0 = tile * n;
    std::vector<float> s(dk * n), s_operand(dk * n), v_new(kC * n);
    for (int i = 0; i < dk; ++i) {
      for (int j = 0; j < n; ++j) s[i * n + j] = state[i * dv + j0 + j];
    }
    for (std::int64_t chunk = 0; chunk < plan.chunks; ++chunk) {
      const ChunkWork& c = work[static_cast<std::size_t>(chunk)];
      for (int e = 0; e < dk * n; ++e) s_operand[e] = bf(s[e]);
      for (int i = 0; i < kC; ++i) {
        for (int j = 0; j < n; ++j) {
          float ws = 0.0f;
          for (int r = 0; r < dk; ++r) ws += c.w[i * dk + r] * s_operand[r * n + j];
          v_new[i * n + j] = bf(c.u[i * dv + j0 + j] - ws);
        }
      }
      const int rows = delta_rule_chunk_rows(plan.tokens, chunk);
      for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < n; ++j) {
          float o = 0.0f;
          for (int r = 0; r < dk; ++r) o += c.q_decayed[i * dk + r] * s_operand[r * n + j];
          for (int m = 0; m <= i; ++m) o += c.p[i * kC + m] * v_new[m * n + j];
          out[(chunk * kC + i) * dv + j0 + j] = bf(o);
        }
      }
      const float carry = std::exp(c.b_last);
      for (int i = 0; i < dk; ++i) {
        for (int j = 0; j < n; ++j) {
          float sum = carry * s[i * n + j];
          for (int m = 0; m < kC; ++m) sum += c.k_decayed[m * dk + i] * v_new[m * n + j];
          s[i * n + j] = sum;
        }
      }
    }
    for (int i = 0; i < dk; ++i) {
      for (int j = 0; j < n; ++j) state[i * dv + j0 + j] = s[i * n + j];
    }
  }
}

// Tokens [first, first + tokens) of every head through the replay, continuing from `states`
// [bh][dk][dv]; returns out [bh][tokens][dv].
std::vector<float> replay(const AttentionInputs& in, const GatedDeltaNetGates& gates, std::int64_t first,
                          std::int64_t tokens, int multiprocessors, std::vector<float>& states) {
  const ChunkDeltaRulePlan plan = plan_chunk_delta_rule(in.batch_heads, tokens, in.dim, in.dim, multiprocessors);
  const std::int64_t d = in.dim;
  std::vector<float> out(static_cast<std::size_t>(in.batch_heads * tokens * d), 0.0f);
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    const HeadInputs x{in, gates, bh, first};
    std::vector<ChunkWork> work;
    for (std::int64_t chunk = 0; chunk < plan.chunks; ++chunk) work.push_back(prepare_chunk(plan, x, chunk));
    std::vector<float> state(states.begin() + bh * d * d, states.begin() + (bh + 1) * d * d);
    std::vector<float> head_out(static_cast<std::size_t>(plan.chunks * kC * d), 0.0f);
    pass_head(plan, work, state, head_out);
    std::copy(state.begin(), state.end(), states.begin() + bh * d * d);
    std::copy(head_out.begin(), head_out.begin() + tokens * d, out.begin() + bh * tokens * d);
  }
  return out;
}

// max |state - reference state| / max |reference state| over every head.
double state_error(const AttentionInputs& in, const GatedDeltaNetGates& gates, const std::vector<float>& states) {
  double max_abs = 0, max_ref = 0;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    const MatrixD ref = gated_deltanet_reference_for_head(in, gates, bh, in.tokens).state;
    for (std::int64_t i = 0; i < ref.rows; ++i) {
      for (std::int64_t j = 0; j < ref.cols; ++j) {
        const double value = states[static_cast<std::size_t>((bh * in.dim + i) * in.dim + j)];
        max_abs = std::max(max_abs, std::fabs(value - ref(i, j)));
        max_ref = std::max(max_ref, std::fabs(ref(i, j)));
      }
    }
  }
  return max_abs / max_ref;
}

struct Shape {
  std::int64_t heads, dim, length;
  int multiprocessors;  // picks the pass's value tile
};

class ChunkDeltaRuleReplay : public ::testing::TestWithParam<Shape> {};

TEST_P(ChunkDeltaRuleReplay, MatchesTheFp64ReferenceOutputsAndFinalState) {
  const Shape s = GetParam();
  const Cell cell = mechanism_cell("gated_deltanet", s.heads, s.dim, s.length, DType::bfloat16, Phase::prefill, 2);
  const AttentionInputs in = make_attention_inputs(cell, s.length, 17);
  const GatedDeltaNetGates gates = make_gated_deltanet_gates(cell, s.length, 17);
  std::vector<float> states(static_cast<std::size_t>(in.batch_heads * s.dim * s.dim), 0.0f);
  const std::vector<float> out = replay(in, gates, 0, s.length, s.multiprocessors, states);
  const Accuracy accuracy = check_gated_deltanet_prefill(in, gates, out.data());
  EXPECT_TRUE(accuracy.output_finite);
  EXPECT_EQ(accuracy.rows_checked, in.batch_heads * s.length);
  EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(DType::bfloat16));
  EXPECT_LT(state_error(in, gates, states), dtype_tolerance(DType::bfloat16));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ChunkDeltaRuleReplay,
                         ::testing::Values(Shape{2, 64, 1, 0}, Shape{2, 64, 63, 0}, Shape{2, 64, 64, 132},
                                           Shape{2, 64, 65, 0}, Shape{1, 64, 300, 132}, Shape{2, 16, 130, 0},
                                           Shape{1, 48, 129, 132}, Shape{1, 128, 200, 0}, Shape{1, 32, 1000, 132}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return "H" + std::to_string(info.param.heads) + "D" + std::to_string(info.param.dim) + "L" +
                                  std::to_string(info.param.length) + "Sm" + std::to_string(info.param.multiprocessors);
                         });

TEST(ChunkDeltaRuleReplay, APrefillContinuesFromTheStateItIsGiven) {
  // 100 tokens, then 170 more from the carried state (neither a multiple of the chunk), against the
  // reference over all 270: the pass's S_c read at the start and the Q~ S_c term on a nonzero state.
  const std::int64_t length = 270, split = 100, dim = 64;
  const Cell cell = mechanism_cell("gated_deltanet", 3, dim, length, DType::bfloat16, Phase::prefill, 1);
  const AttentionInputs in = make_attention_inputs(cell, length, 5);
  const GatedDeltaNetGates gates = make_gated_deltanet_gates(cell, length, 5);
  std::vector<float> states(static_cast<std::size_t>(in.batch_heads * dim * dim), 0.0f);
  const std::vector<float> head = replay(in, gates, 0, split, 132, states);
  const std::vector<float> tail = replay(in, gates, split, length - split, 132, states);
  std::vector<float> out(static_cast<std::size_t>(in.batch_heads * length * dim));
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    std::copy(head.begin() + bh * split * dim, head.begin() + (bh + 1) * split * dim, out.begin() + bh * length * dim);
    std::copy(tail.begin() + bh * (length - split) * dim, tail.begin() + (bh + 1) * (length - split) * dim,
              out.begin() + (bh * length + split) * dim);
  }
  const Accuracy accuracy = check_gated_deltanet_prefill(in, gates, out.data());
  EXPECT_TRUE(accuracy.output_finite);
  EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(DType::bfloat16));
  EXPECT_LT(state_error(in, gates, states), dtype_tolerance(DType::bfloat16));
}

TEST(ChunkDeltaRuleReplay, TheDeltaCorrectionIsWhatMeetsTheReference) {
  // The same replay with V' = U (W S_c dropped: the state's correction of what it already returns
  // for each key) must miss the reference: the check can fail, and the W term carries real weight.
  const Cell cell = mechanism_cell("gated_deltanet", 1, 64, 256, DType::bfloat16, Phase::prefill, 1);
  const AttentionInputs in = make_attention_inputs(cell, 256, 3);
  const GatedDeltaNetGates gates = make_gated_deltanet_gates(cell, 256, 3);
  const ChunkDeltaRulePlan plan = plan_chunk_delta_rule(1, 256, 64, 64, 0);
  const HeadInputs x{in, gates, 0, 0};
  std::vector<ChunkWork> work;
  for (std::int64_t chunk = 0; chunk < plan.chunks; ++chunk) {
    work.push_back(prepare_chunk(plan, x, chunk));
    std::fill(work.back().w.begin(), work.back().w.end(), 0.0f);
  }
  std::vector<float> state(64 * 64, 0.0f), out(static_cast<std::size_t>(plan.chunks * kC * 64), 0.0f);
  pass_head(plan, work, state, out);
  EXPECT_GT(check_gated_deltanet_prefill(in, gates, out.data()).max_rel_error, 10 * dtype_tolerance(DType::bfloat16));
}

}  // namespace
}  // namespace arch_bench
