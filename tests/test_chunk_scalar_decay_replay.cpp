// The arithmetic of the chunkwise tensor-core prefill (mechanisms/common/chunk_scalar_decay.cuh)
// replayed on the CPU (tests/support/scalar_decay_replay.hpp) against an fp64 recurrence,
// S_t = a_t S_{t-1} + k_t v_t^T, o_t = S_t^T q_t: retnet's constant decays and Mamba-2-like decays
// that vary per token, around chunk boundaries and over long sequences, with the per-chunk states in
// bf16 as the kernels hold them. The error is max |o - o_ref| / max |o_ref| (the cells' measure).
// Measured at the seeds below with bf16 states: 2.1e-3 to 4.0e-3; the bound asserted is bf16's 1e-2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "support/scalar_decay_replay.hpp"

namespace arch_bench {
namespace {

using testing::ChunkStateStorage;
using testing::ScalarDecayHead;
using testing::to_bf16;

enum class Decay { retnet, varying };

// N(0, 1) operands rounded to bf16 (q and k scaled by 1/sqrt(dk), as attention logits); log-decays
// log(1 - 2^-5) for every token (retnet's first head) or dt A with dt in (0, 0.25), A = -1.
ScalarDecayHead random_head(std::int64_t tokens, int dk, int dv, Decay decay, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> dt(0.0f, 0.25f);
  ScalarDecayHead h;
  h.tokens = tokens;
  h.dk = dk;
  h.dv = dv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int i = 0; i < dk; ++i) h.q.push_back(to_bf16(normal(rng) * scale));
    for (int i = 0; i < dk; ++i) h.k.push_back(to_bf16(normal(rng) * scale));
    for (int j = 0; j < dv; ++j) h.v.push_back(to_bf16(normal(rng)));
    h.log_decay.push_back(decay == Decay::retnet ? std::log1p(-std::ldexp(1.0f, -5)) : -dt(rng));
  }
  return h;
}

struct Fp64Run {
  std::vector<double> outputs, state;
};

Fp64Run recurrence(const ScalarDecayHead& h, std::int64_t first, std::int64_t rows, std::vector<double> state) {
  Fp64Run run;
  for (std::int64_t t = first; t < first + rows; ++t) {
    const double a = std::exp(double{h.log_decay[static_cast<std::size_t>(t)]});
    for (int i = 0; i < h.dk; ++i) {
      for (int j = 0; j < h.dv; ++j) {
        double& s = state[static_cast<std::size_t>(i * h.dv + j)];
        s = a * s + double{h.k[static_cast<std::size_t>(t * h.dk + i)]} * h.v[static_cast<std::size_t>(t * h.dv + j)];
      }
    }
    for (int j = 0; j < h.dv; ++j) {
      double o = 0;
      for (int i = 0; i < h.dk; ++i) o += double{h.q[static_cast<std::size_t>(t * h.dk + i)]} * state[static_cast<std::size_t>(i * h.dv + j)];
      run.outputs.push_back(o);
    }
  }
  run.state = std::move(state);
  return run;
}

// max |got - want| / max |want|, got rounded to bf16 where `round` (the outputs the epilogue stores).
double relative_error(const std::vector<float>& got, const std::vector<double>& want, bool round) {
  double max_err = 0, max_ref = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = round ? to_bf16(got[i]) : got[i];
    max_err = std::max(max_err, std::fabs(g - want[i]));
    max_ref = std::max(max_ref, std::fabs(want[i]));
  }
  return max_err / max_ref;
}

// tokens [first, first + rows) of h as a head of its own.
ScalarDecayHead slice(const ScalarDecayHead& h, std::int64_t first, std::int64_t rows) {
  ScalarDecayHead s;
  s.tokens = rows;
  s.dk = h.dk;
  s.dv = h.dv;
  s.q.assign(h.q.begin() + first * h.dk, h.q.begin() + (first + rows) * h.dk);
  s.k.assign(h.k.begin() + first * h.dk, h.k.begin() + (first + rows) * h.dk);
  s.v.assign(h.v.begin() + first * h.dv, h.v.begin() + (first + rows) * h.dv);
  s.log_decay.assign(h.log_decay.begin() + first, h.log_decay.begin() + first + rows);
  return s;
}

using ReplayCase = std::tuple<Decay, int, int, std::int64_t>;
class ChunkScalarDecayReplay : public ::testing::TestWithParam<ReplayCase> {};

TEST_P(ChunkScalarDecayReplay, Bf16ChunkStatesStayWithinTheBf16ToleranceOfTheFp64Recurrence) {
  const auto [decay, dk, dv, tokens] = GetParam();
  const ScalarDecayHead h = random_head(tokens, dk, dv, decay, 7);
  const Fp64Run ref = recurrence(h, 0, tokens, std::vector<double>(static_cast<std::size_t>(dk * dv), 0.0));
  const testing::ScalarDecayReplay bf16_states =
      testing::replay_chunk_scalar_decay(h, std::vector<float>(static_cast<std::size_t>(dk * dv), 0.0f), ChunkStateStorage::bf16);
  const double error = relative_error(bf16_states.outputs, ref.outputs, true);
  EXPECT_LT(error, dtype_tolerance(DType::bfloat16));
  EXPECT_LT(relative_error(bf16_states.state, ref.state, false), dtype_tolerance(DType::bfloat16))
      << "the fp32 carried state sums one bf16 rounding of each U_c";
  RecordProperty("max_rel_error", std::to_string(error));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ChunkScalarDecayReplay,
    ::testing::Values(ReplayCase{Decay::retnet, 64, 64, 1}, ReplayCase{Decay::retnet, 64, 64, 65},
                      ReplayCase{Decay::retnet, 64, 64, 1000}, ReplayCase{Decay::retnet, 16, 128, 300},
                      ReplayCase{Decay::varying, 128, 64, 63}, ReplayCase{Decay::varying, 128, 64, 64},
                      ReplayCase{Decay::varying, 128, 64, 700}),
    [](const ::testing::TestParamInfo<ReplayCase>& info) {
      return std::string(std::get<0>(info.param) == Decay::retnet ? "retnet" : "varying") + "_" +
             std::to_string(std::get<1>(info.param)) + "x" + std::to_string(std::get<2>(info.param)) + "_L" +
             std::to_string(std::get<3>(info.param));
    });

TEST(ChunkScalarDecayReplayLong, NoDecayOver4096TokensStaysWithinTheTolerance) {
  // a_t = 1 (linear attention's case): S grows with L and nothing decays the rounding of earlier
  // chunks' U_c away; 64 chunks of bf16 U_c summed in fp32.
  ScalarDecayHead h = random_head(4096, 64, 64, Decay::retnet, 11);
  std::fill(h.log_decay.begin(), h.log_decay.end(), 0.0f);
  const Fp64Run ref = recurrence(h, 0, 4096, std::vector<double>(64 * 64, 0.0));
  const testing::ScalarDecayReplay r =
      testing::replay_chunk_scalar_decay(h, std::vector<float>(64 * 64, 0.0f), ChunkStateStorage::bf16);
  const double error = relative_error(r.outputs, ref.outputs, true);
  EXPECT_LT(error, dtype_tolerance(DType::bfloat16));
  EXPECT_LT(relative_error(r.state, ref.state, false), dtype_tolerance(DType::bfloat16));
  RecordProperty("max_rel_error", std::to_string(error));
}

TEST(ChunkScalarDecayReplayLong, ContinuesFromTheStateItIsGiven) {
  // Tokens [0, 100) then [100, 300) carrying S (100 is not a chunk boundary): the second part's
  // outputs against the fp64 recurrence over all 300.
  const ScalarDecayHead h = random_head(300, 64, 64, Decay::varying, 13);
  const Fp64Run ref = recurrence(h, 0, 300, std::vector<double>(64 * 64, 0.0));
  const testing::ScalarDecayReplay head =
      testing::replay_chunk_scalar_decay(slice(h, 0, 100), std::vector<float>(64 * 64, 0.0f), ChunkStateStorage::bf16);
  const testing::ScalarDecayReplay tail =
      testing::replay_chunk_scalar_decay(slice(h, 100, 200), head.state, ChunkStateStorage::bf16);
  const std::vector<double> want(ref.outputs.begin() + 100 * 64, ref.outputs.end());
  EXPECT_LT(relative_error(tail.outputs, want, true), dtype_tolerance(DType::bfloat16));
  EXPECT_LT(relative_error(tail.state, ref.state, false), dtype_tolerance(DType::bfloat16));
}

}  // namespace
}  // namespace arch_bench
