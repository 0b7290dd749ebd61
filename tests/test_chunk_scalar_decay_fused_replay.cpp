// The fused state pass's arithmetic (mechanisms/common/chunk_scalar_decay_fused.cuh), replayed on the
// CPU (tests/support/scalar_decay_replay.hpp: S carried in fp32, only the stored entering states in
// bf16), against the fp64 references of the three mechanisms that run it, through each one's
// operand loads and epilogue as its policy has them:
//   retnet            k, q, v as stored, log a = log1p(-2^(-5-h)), out = bf16(o)
//   mamba2            k = B, q = C, v = bf16(dt x), log a = dt A, out = bf16((y + D x) silu(z))
//   linear_attention  bf16(phi(k)), bf16(phi(q)), [v | 1 | 0...], no decay, out = bf16(o / o_dv)
// The error is max |got - want| / max |want| over every output row, and separately over the final
// state. Each case also replays the three kernels (the same measure, for the comparison), and the
// faults of replay_fused_scalar_decay must miss the bf16 tolerance by more than 3x wherever the
// mechanism can show them (a fault of the decay cannot show without one: linear attention).
// Measured (outputs / final state): fused 1.5e-3..4.4e-3 / 1.5e-4..2.5e-3, the three kernels
// 1.5e-3..3.9e-3 / 5.4e-4..3.7e-3 (the fused state 1.3x to 4.2x closer: U_c is never rounded);
// the faults 7.5e-2 (mamba2, entering state stored after its update) to 3.4 (retnet, carry not
// decayed), against the tolerance 1e-2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "mechanisms/common/feature_maps.hpp"
#include "mechanisms/common/ssm_reference_math.hpp"
#include "mechanisms/linear_attention/reference.hpp"
#include "mechanisms/mamba2/reference.hpp"
#include "mechanisms/retnet/reference.hpp"
#include "support/scalar_decay_replay.hpp"

namespace arch_bench {
namespace {

using testing::ChunkStateStorage;
using testing::FusedFault;
using testing::ScalarDecayHead;
using testing::ScalarDecayReplay;
using testing::to_bf16;

const double kTolerance = dtype_tolerance(DType::bfloat16);

double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  double max_err = 0, max_ref = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    max_err = std::max(max_err, std::fabs(got[i] - want[i]));
    max_ref = std::max(max_ref, std::fabs(want[i]));
  }
  return max_err / max_ref;
}

// One mechanism's head: the operands its policy loads, its epilogue from a row of O to its stored
// outputs, and its fp64 reference's outputs and final state (both flattened as the epilogue and
// state_of write them).
struct MechanismHead {
  ScalarDecayHead operands;
  std::function<std::vector<double>(const std::vector<float>& outputs)> epilogue;  // O [L][dv] -> outputs
  std::function<std::vector<double>(const std::vector<float>& state)> state_of;   // S [dk][dv] -> reference's
  std::vector<double> want_outputs, want_state;
};

struct Errors {
  double outputs = 0, state = 0;
  double worst() const { return std::max(outputs, state); }
};

Errors errors_of(const MechanismHead& m, const ScalarDecayReplay& r) {
  return {relative_error(m.epilogue(r.outputs), m.want_outputs), relative_error(m.state_of(r.state), m.want_state)};
}

std::vector<float> zero_state(const ScalarDecayHead& h) {
  return std::vector<float>(static_cast<std::size_t>(h.dk * h.dv), 0.0f);
}

std::vector<double> flat(const MatrixD& m) { return m.data; }

// N(0, 1) draws rounded to bf16, scaled.
std::vector<float> bf16_draws(std::mt19937& rng, std::int64_t n, float scale) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (float& e : x) e = to_bf16(normal(rng) * scale);
  return x;
}

MatrixD matrix_of(const std::vector<float>& x, std::int64_t rows, std::int64_t cols) {
  MatrixD m(rows, cols);
  for (std::int64_t i = 0; i < rows * cols; ++i) m.data[static_cast<std::size_t>(i)] = x[static_cast<std::size_t>(i)];
  return m;
}

std::vector<double> rounded_outputs(const std::vector<float>& o) {
  std::vector<double> out(o.size());
  for (std::size_t i = 0; i < o.size(); ++i) out[i] = to_bf16(o[i]);
  return out;
}

std::vector<double> as_doubles(const std::vector<float>& s) { return {s.begin(), s.end()}; }

MechanismHead retnet_head(std::int64_t tokens, int d, int head, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  MechanismHead m;
  ScalarDecayHead& h = m.operands;
  h.tokens = tokens;
  h.dk = h.dv = d;
  h.q = bf16_draws(rng, tokens * d, scale);
  h.k = bf16_draws(rng, tokens * d, scale);
  h.v = bf16_draws(rng, tokens * d, 1.0f);
  h.log_decay.assign(static_cast<std::size_t>(tokens), std::log1p(-std::ldexp(1.0f, -5 - head)));
  const RetNetResult ref = retnet_scan(matrix_of(h.q, tokens, d), matrix_of(h.k, tokens, d), matrix_of(h.v, tokens, d),
                                       retnet_gamma(head));
  m.want_outputs = flat(ref.outputs);
  m.want_state = flat(ref.state);
  m.epilogue = rounded_outputs;
  m.state_of = as_doubles;
  return m;
}

MechanismHead mamba2_head(std::int64_t tokens, int n, int p, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const Mamba2HeadParametersD params{.A = -0.5, .dt_bias = -2.0, .D = 0.5};
  Mamba2HeadSequenceD seq;
  const std::vector<float> x = bf16_draws(rng, tokens * p, 1.0f), z = bf16_draws(rng, tokens * p, 1.0f);
  const std::vector<float> dt_raw = bf16_draws(rng, tokens, 1.0f);
  const float bc_scale = 1.0f / std::sqrt(static_cast<float>(n));
  const std::vector<float> B = bf16_draws(rng, tokens * n, bc_scale), C = bf16_draws(rng, tokens * n, bc_scale);
  seq.x = matrix_of(x, tokens, p);
  seq.z = matrix_of(z, tokens, p);
  seq.dt_raw.assign(dt_raw.begin(), dt_raw.end());
  seq.B = matrix_of(B, tokens, n);
  seq.C = matrix_of(C, tokens, n);
  const Mamba2ReferenceResult ref = mamba2_ssd_scan(seq, params);

  MechanismHead m;
  ScalarDecayHead& h = m.operands;
  h.tokens = tokens;
  h.dk = n;  // S = H^T [N, P]
  h.dv = p;
  h.q = C;
  h.k = B;
  std::vector<float> dt(static_cast<std::size_t>(tokens));
  for (std::int64_t t = 0; t < tokens; ++t) {
    // fp32 as the policy computes it: softplus(dt_raw + bias), log a = dt A.
    const float arg = dt_raw[static_cast<std::size_t>(t)] + static_cast<float>(params.dt_bias);
    dt[static_cast<std::size_t>(t)] = arg > 0.0f ? arg + std::log1p(std::exp(-arg)) : std::log1p(std::exp(arg));
    h.log_decay.push_back(dt[static_cast<std::size_t>(t)] * static_cast<float>(params.A));
    for (int j = 0; j < p; ++j) h.v.push_back(to_bf16(dt[static_cast<std::size_t>(t)] * x[static_cast<std::size_t>(t * p + j)]));
  }
  m.want_outputs = flat(ref.outputs);
  m.want_state = flat(ref.state);  // H [P, N]
  m.epilogue = [=](const std::vector<float>& o) {
    std::vector<double> out(o.size());
    for (std::size_t e = 0; e < o.size(); ++e) {
      const float gate = z[e] / (1.0f + std::exp(-z[e]));
      out[e] = to_bf16((o[e] + static_cast<float>(params.D) * x[e]) * gate);
    }
    return out;
  };
  m.state_of = [=](const std::vector<float>& s) {  // S [N][P] -> H [P][N]
    std::vector<double> hp(s.size());
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < p; ++j) hp[static_cast<std::size_t>(j * n + i)] = s[static_cast<std::size_t>(i * p + j)];
    }
    return hp;
  };
  return m;
}

MechanismHead linear_attention_head(std::int64_t tokens, int d, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const FeatureMap map = FeatureMap::elu_plus_one;
  const std::vector<float> q = bf16_draws(rng, tokens * d, 1.0f), k = bf16_draws(rng, tokens * d, 1.0f);
  const std::vector<float> v = bf16_draws(rng, tokens * d, 1.0f);
  const LinearAttentionResult ref =
      linear_attention_scan(matrix_of(q, tokens, d), matrix_of(k, tokens, d), matrix_of(v, tokens, d), map);
  const int width = d + 16;  // [v | 1 | 0 ...]: column d carries the normaliser
  MechanismHead m;
  ScalarDecayHead& h = m.operands;
  h.tokens = tokens;
  h.dk = d;
  h.dv = width;
  h.log_decay.assign(static_cast<std::size_t>(tokens), 0.0f);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int i = 0; i < d; ++i) {
      h.q.push_back(to_bf16(apply_feature_map(map, q[static_cast<std::size_t>(t * d + i)])));
      h.k.push_back(to_bf16(apply_feature_map(map, k[static_cast<std::size_t>(t * d + i)])));
    }
    for (int j = 0; j < width; ++j) h.v.push_back(j < d ? v[static_cast<std::size_t>(t * d + j)] : (j == d ? 1.0f : 0.0f));
  }
  m.want_outputs = flat(ref.outputs);
  m.want_state = flat(ref.state);
  m.want_state.insert(m.want_state.end(), ref.normalizer.begin(), ref.normalizer.end());
  m.epilogue = [=](const std::vector<float>& o) {
    std::vector<double> out;
    for (std::int64_t t = 0; t < tokens; ++t) {
      const float* row = o.data() + t * width;
      for (int j = 0; j < d; ++j) out.push_back(to_bf16(row[j] / row[d]));
    }
    return out;
  };
  m.state_of = [=](const std::vector<float>& s) {  // [S | z | 0] -> S [d][d], then z [d]
    std::vector<double> sz;
    for (int i = 0; i < d; ++i) {
      for (int j = 0; j < d; ++j) sz.push_back(s[static_cast<std::size_t>(i * width + j)]);
    }
    for (int i = 0; i < d; ++i) sz.push_back(s[static_cast<std::size_t>(i * width + d)]);
    return sz;
  };
  return m;
}

struct FusedCase {
  std::string name;
  std::function<MechanismHead()> make;
  bool decays;  // whether a fault of the decay can show
};

class ChunkScalarDecayFusedReplay : public ::testing::TestWithParam<FusedCase> {};

TEST_P(ChunkScalarDecayFusedReplay, MeetsTheBf16ToleranceOfTheMechanismsFp64Reference) {
  const MechanismHead m = GetParam().make();
  const Errors fused = errors_of(m, testing::replay_fused_scalar_decay(m.operands, zero_state(m.operands)));
  const Errors three = errors_of(
      m, testing::replay_chunk_scalar_decay(m.operands, zero_state(m.operands), ChunkStateStorage::bf16));
  EXPECT_LT(fused.outputs, kTolerance);
  EXPECT_LT(fused.state, kTolerance);
  EXPECT_LT(three.worst(), kTolerance);
  RecordProperty("fused_outputs", std::to_string(fused.outputs));
  RecordProperty("fused_state", std::to_string(fused.state));
  RecordProperty("three_kernel_outputs", std::to_string(three.outputs));
  RecordProperty("three_kernel_state", std::to_string(three.state));
}

TEST_P(ChunkScalarDecayFusedReplay, EveryFaultItCanShowMissesTheToleranceByMoreThanThreeTimes) {
  const MechanismHead m = GetParam().make();
  std::vector<FusedFault> faults = {FusedFault::entering_after_update};
  if (GetParam().decays) {
    faults.insert(faults.end(),
                  {FusedFault::decay_after_accumulate, FusedFault::tail_padding_decayed, FusedFault::carry_not_decayed});
  }
  for (const FusedFault fault : faults) {
    const Errors e = errors_of(m, testing::replay_fused_scalar_decay(m.operands, zero_state(m.operands), fault));
    EXPECT_GT(e.worst(), 3 * kTolerance) << GetParam().name << " fault " << static_cast<int>(fault);
    RecordProperty("fault_" + std::to_string(static_cast<int>(fault)), std::to_string(e.worst()));
  }
}

// Lengths with a short last chunk (the padding fault shows only there), several chunks, and head 0
// (retnet's fastest decay, 1 - 2^-5) and 3.
INSTANTIATE_TEST_SUITE_P(
    Mechanisms, ChunkScalarDecayFusedReplay,
    ::testing::Values(FusedCase{"retnet_h0_d64_L1000", [] { return retnet_head(1000, 64, 0, 21); }, true},
                      FusedCase{"retnet_h3_d64_L300", [] { return retnet_head(300, 64, 3, 22); }, true},
                      FusedCase{"mamba2_N128_P64_L700", [] { return mamba2_head(700, 128, 64, 23); }, true},
                      FusedCase{"linear_attention_d64_L1000", [] { return linear_attention_head(1000, 64, 24); }, false},
                      FusedCase{"linear_attention_d64_L4096", [] { return linear_attention_head(4096, 64, 25); }, false}),
    [](const ::testing::TestParamInfo<FusedCase>& info) { return info.param.name; });

TEST(ChunkScalarDecayFusedReplayState, ContinuesFromTheStateItIsGiven) {
  // retnet over [0, 100) three-kernel, then [100, 300) fused from that state, against the reference
  // over all 300 (a prefill continues from whatever S holds).
  const MechanismHead all = retnet_head(300, 64, 1, 26);
  ScalarDecayHead first = all.operands, second = all.operands;
  first.tokens = 100;
  second.tokens = 200;
  const auto cut = [](std::vector<float>& x, std::size_t from, std::size_t to) {
    x = std::vector<float>(x.begin() + static_cast<std::ptrdiff_t>(from), x.begin() + static_cast<std::ptrdiff_t>(to));
  };
  for (ScalarDecayHead* h : {&first, &second}) {
    const std::size_t from = h == &first ? 0 : 100, to = h == &first ? 100 : 300;
    cut(h->q, from * 64, to * 64);
    cut(h->k, from * 64, to * 64);
    cut(h->v, from * 64, to * 64);
    cut(h->log_decay, from, to);
  }
  const ScalarDecayReplay head = testing::replay_chunk_scalar_decay(first, zero_state(first), ChunkStateStorage::bf16);
  const ScalarDecayReplay tail = testing::replay_fused_scalar_decay(second, head.state);
  const std::vector<double> want(all.want_outputs.begin() + 100 * 64, all.want_outputs.end());
  EXPECT_LT(relative_error(rounded_outputs(tail.outputs), want), kTolerance);
  EXPECT_LT(relative_error(as_doubles(tail.state), all.want_state), kTolerance);
}

}  // namespace
}  // namespace arch_bench
