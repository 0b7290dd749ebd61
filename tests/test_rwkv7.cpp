// RWKV-7 (Goose): the fp64 recurrent reference, the CPU recurrence (decode step and prefill), the
// mechanism contract and the conformance round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "mechanisms/capacity.hpp"
#include "core/bf16.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/rwkv7/cpu.hpp"
#include "mechanisms/rwkv/rwkv7/reference.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "runner/conformance/conformance.hpp"
#include "support/cli.hpp"
#include "support/conformance_round_trip.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/rwkv_problem.hpp"

namespace arch_bench {
namespace {

Cell rwkv7_cell(std::int64_t heads, std::int64_t dim, std::int64_t length, DType dtype, Phase phase = Phase::prefill,
                std::int64_t batch = 1) {
  return testing::mechanism_cell("rwkv7", heads, dim, length, dtype, phase, batch);
}

template <class T>
struct Problem : testing::RwkvProblem<T> {
  using Base = testing::RwkvProblem<T>;
  using Base::in, Base::shape, Base::storage;
  Problem(const Cell& cell, std::int64_t tokens, std::uint64_t seed = 7) : Base(cell, tokens, seed, RwkvVersion::v7) {}
  RwkvTokens<T> tokens() const {
    return {storage[kRwkvR].data(),     storage[kRwkvK].data(),     storage[kRwkvV].data(),
            storage[kRwkvDecay].data(), storage[kRwkvKappa].data(), storage[kRwkvIclr].data()};
  }
  // The recurrence (the decode step over every token) or the chunkwise prefill, from S = 0.
  std::vector<float> prefill(std::vector<float>* state_out = nullptr, bool chunkwise = false) const {
    std::vector<float> state(rwkv7_state_floats(shape), 0.0f);
    std::vector<T> out(storage[kRwkvK].size());
    if (chunkwise) {
      rwkv7_prefill_chunkwise(shape, in.tokens, tokens(), state.data(), out.data());
    } else {
      rwkv7_recurrent(shape, in.tokens, tokens(), state.data(), out.data());
    }
    if (state_out) *state_out = state;
    return testing::to_floats(out);
  }
  // Every decay logit set to `w_raw` (re-rounded through T), e.g. +-20 for w at its ends.
  void set_decay_logits(float w_raw) {
    std::fill(in.sequence[kRwkvDecay].begin(), in.sequence[kRwkvDecay].end(), w_raw);
    storage[kRwkvDecay] = testing::to_storage<T>(in.sequence[kRwkvDecay]);
  }
  RwkvMatrixResult reference(std::int64_t bh) const {
    const std::int64_t n = in.tokens;
    return rwkv7_reference(in.head_matrix(kRwkvR, bh, n), in.head_matrix(kRwkvDecay, bh, n),
                           in.head_matrix(kRwkvK, bh, n), in.head_matrix(kRwkvV, bh, n),
                           in.head_matrix(kRwkvKappa, bh, n), in.head_matrix(kRwkvIclr, bh, n));
  }
  double against_reference(const std::vector<float>& out) const {
    return this->relative_error_against(out, [&](std::int64_t bh) { return reference(bh); });
  }
};

TEST(Rwkv7Reference, DeltaRuleReplacesTheValueAlongKappa) {
  // w = 1 (w_raw -> -inf), kappa = k unit-norm, iclr = 1: after writing (k, v) onto any state,
  // S k = v exactly, and the state's component orthogonal to k is untouched.
  const std::int64_t D = 4;
  MatrixD r(2, D), w_raw(2, D), k(2, D), v(2, D), kappa(2, D), iclr(2, D);
  for (std::int64_t j = 0; j < D; ++j) {
    w_raw(0, j) = w_raw(1, j) = -1e3;
    iclr(0, j) = iclr(1, j) = 1.0;
    v(0, j) = 1.0 + static_cast<double>(j);
    v(1, j) = -2.0 + 0.5 * static_cast<double>(j);
  }
  k(0, 0) = 1.0;                                  // e_0
  k(1, 0) = k(1, 1) = 1.0 / std::sqrt(2.0);       // (e_0 + e_1)/sqrt 2
  kappa = k;
  r = k;
  const RwkvMatrixResult ref = rwkv7_reference(r, w_raw, k, v, kappa, iclr);
  for (std::int64_t i = 0; i < D; ++i) {
    EXPECT_NEAR(ref.outputs(0, i), v(0, i), 1e-12);  // o_0 = S_0 k_0 = v_0
    EXPECT_NEAR(ref.outputs(1, i), v(1, i), 1e-12);  // o_1 = S_1 k_1 = v_1
  }
  // The state along e_0 - e_1 (orthogonal to k_1) keeps what the first write put there.
  for (std::int64_t i = 0; i < D; ++i) {
    const double along = (ref.state(i, 0) - ref.state(i, 1)) / std::sqrt(2.0);
    EXPECT_NEAR(along, v(0, i) / std::sqrt(2.0), 1e-12);
  }
  EXPECT_THROW(rwkv7_reference(r, w_raw, k, v, kappa, MatrixD(2, D + 1)), std::invalid_argument);
}

TEST(Rwkv7Kernel, RecurrentMatchesReferenceFp32) {
  const Problem<float> p(rwkv7_cell(2, 32, 300, DType::float32, Phase::prefill, 2), 300);
  std::vector<float> state;
  const double error = p.against_reference(p.prefill(&state));
  EXPECT_LT(error, 1e-5);
  const RwkvMatrixResult ref = p.reference(3);
  const std::vector<float> value_key = rwkv7_state_value_key(p.shape, state);  // the kernels hold S^T
  std::vector<float> last(value_key.end() - 32 * 32, value_key.end());
  std::vector<float> expected(ref.state.data.begin(), ref.state.data.end());
  EXPECT_LT(testing::relative_max_error(last, expected), 1e-5);
  std::printf("recurrent fp32 vs fp64 reference: %.3g\n", error);
}

// The recurrence updates 8 state rows at a time where dim is a multiple of 8 (40: an odd number of
// vectors per row, 64); 7 and 12 take the scalar rows (12 with a vector prologue and a scalar tail).
TEST(Rwkv7Kernel, RecurrentMatchesReferenceAtHeadDimsOffTheVector) {
  for (std::int64_t dim : {7, 12, 40, 64}) {
    const Problem<float> p(rwkv7_cell(1, dim, 70, DType::float32), 70);
    std::vector<float> state;
    EXPECT_LT(p.against_reference(p.prefill(&state)), 1e-5) << "dim " << dim;
  }
}

// The WY/UT chunkwise prefill is the recurrence re-associated: outputs and final state agree to fp32
// rounding at lengths around the chunk (1, a chunk +- 1, several chunks and a remainder) and at both
// ends of the decay's range (w_raw = -20: w = 1 - 1e-9; +20: w = e^{-e^{-0.5}} = 0.545, the strongest).
TEST(Rwkv7Kernel, ChunkwiseMatchesRecurrentFp32) {
  for (float w_raw : {0.0f, -20.0f, 20.0f}) {
    for (std::int64_t tokens : {std::int64_t{1}, kRwkv7Chunk - 1, kRwkv7Chunk, kRwkv7Chunk + 1, 5 * kRwkv7Chunk + 7}) {
      Problem<float> p(rwkv7_cell(2, 32, tokens, DType::float32, Phase::prefill, 2), tokens);
      if (w_raw != 0.0f) p.set_decay_logits(w_raw);  // 0: the drawn decays
      std::vector<float> recurrent_state, chunkwise_state;
      const std::vector<float> recurrent = p.prefill(&recurrent_state);
      const std::vector<float> chunkwise = p.prefill(&chunkwise_state, true);
      EXPECT_LT(testing::relative_max_error(chunkwise, recurrent), 1e-5) << "L = " << tokens << ", w_raw " << w_raw;
      EXPECT_LT(testing::relative_max_error(chunkwise_state, recurrent_state), 1e-5)
          << "L = " << tokens << ", w_raw " << w_raw;
      EXPECT_LT(p.against_reference(chunkwise), 1e-5) << "L = " << tokens << ", w_raw " << w_raw;
    }
  }
}

// Odd head dims take the kernels' column tails (no whole 64-float block, a remainder of one vector).
TEST(Rwkv7Kernel, ChunkwiseMatchesRecurrentAtOddHeadDims) {
  for (std::int64_t dim : {7, 40, 72}) {
    const Problem<float> p(rwkv7_cell(1, dim, 75, DType::float32), 75);
    std::vector<float> recurrent_state, chunkwise_state;
    const std::vector<float> recurrent = p.prefill(&recurrent_state);
    const std::vector<float> chunkwise = p.prefill(&chunkwise_state, true);
    EXPECT_LT(testing::relative_max_error(chunkwise, recurrent), 1e-5) << "dim " << dim;
    EXPECT_LT(testing::relative_max_error(chunkwise_state, recurrent_state), 1e-5) << "dim " << dim;
  }
}

// A prefill continues from the state it is given: two calls (split off the chunk grid) equal one.
TEST(Rwkv7Kernel, ChunkwiseCarriesTheStateAcrossCalls) {
  const std::int64_t tokens = 150, first = 45, dim = 16;
  const Problem<float> p(rwkv7_cell(2, dim, tokens, DType::float32), tokens);
  std::vector<float> whole_state;
  const std::vector<float> whole = p.prefill(&whole_state, true);
  std::vector<float> state(rwkv7_state_floats(p.shape), 0.0f), out(whole.size());
  std::vector<std::vector<float>> part(kRwkvInputCount);
  for (const auto& [offset, count] : {std::pair<std::int64_t, std::int64_t>{0, first}, {first, tokens - first}}) {
    for (int i = 0; i < kRwkvInputCount; ++i) {
      part[i].clear();
      for (std::int64_t bh = 0; bh < 2; ++bh) {
        const auto row = p.storage[i].begin() + (bh * tokens + offset) * dim;
        part[i].insert(part[i].end(), row, row + count * dim);
      }
    }
    std::vector<float> o(2 * count * dim);
    rwkv7_prefill_chunkwise(p.shape, count,
                            RwkvTokens<float>{part[0].data(), part[1].data(), part[2].data(), part[3].data(),
                                              part[4].data(), part[5].data()},
                            state.data(), o.data());
    for (std::int64_t bh = 0; bh < 2; ++bh) {
      std::copy_n(o.begin() + bh * count * dim, count * dim, out.begin() + (bh * tokens + offset) * dim);
    }
  }
  EXPECT_LT(testing::relative_max_error(out, whole), 1e-5);
  EXPECT_LT(testing::relative_max_error(state, whole_state), 1e-5);
}

// The decode step is the prefill's token exactly: both sum u = a^T H over the key rows in one order
// (the prefill carries it from the previous token's pass, a step computes it afresh). Head dims that
// take a whole slice, a slice and a float8, and one wide vector; at 7 the single columns' sums are
// vectorised by the compiler with separate multiplies and adds in one instantiation and FMAs in the
// other, so there the two agree to rounding, compounded over the tokens: 2.2e-6 after 130 tokens
// in the -march=native build on Zen 4, under 1e-6 elsewhere.
TEST(Rwkv7Kernel, DecodeStepAtTIsPrefillRowT) {
  for (std::int64_t dim : {64, 72, 16, 7}) {
    const std::int64_t tokens = 130;
    const Problem<float> p(rwkv7_cell(2, dim, tokens, DType::float32), tokens);
    const std::vector<float> prefill = p.prefill();
    std::vector<float> state(rwkv7_state_floats(p.shape), 0.0f), out(2 * dim);
    std::vector<std::vector<float>> token(kRwkvInputCount, std::vector<float>(2 * dim));
    std::int64_t differing = 0;
    double worst = 0;
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (int i = 0; i < kRwkvInputCount; ++i) {
        for (std::int64_t bh = 0; bh < 2; ++bh) {
          std::copy_n(p.storage[i].begin() + (bh * tokens + t) * dim, dim, token[i].begin() + bh * dim);
        }
      }
      rwkv7_recurrent(p.shape, 1,
                      RwkvTokens<float>{token[0].data(), token[1].data(), token[2].data(), token[3].data(),
                                        token[4].data(), token[5].data()},
                      state.data(), out.data());
      for (std::int64_t bh = 0; bh < 2; ++bh) {
        for (std::int64_t j = 0; j < dim; ++j) {
          const float step = out[bh * dim + j], expected = prefill[(bh * tokens + t) * dim + j];
          differing += step != expected;
          worst = std::fmax(worst, std::fabs(step - expected) / std::fmax(1.0f, std::fabs(expected)));
        }
      }
    }
    if (dim % kFloat8Lanes == 0) {
      EXPECT_EQ(differing, 0) << "dim " << dim;
    }
    EXPECT_LT(worst, 1e-5) << "dim " << dim;
  }
}

TEST(Rwkv7Kernel, Bf16StorageWithinTolerance) {
  const Problem<bf16> p(rwkv7_cell(2, 64, 700, DType::bfloat16), 700);
  for (bool chunkwise : {false, true}) {
    const double error = p.against_reference(p.prefill(nullptr, chunkwise));
    EXPECT_LT(error, dtype_tolerance(DType::bfloat16)) << (chunkwise ? "chunkwise" : "recurrent");
    std::printf("bf16 %s vs fp64 reference: %.3g\n", chunkwise ? "chunkwise" : "recurrent", error);
  }
}

// The state is one fp32 d x d matrix per head, at every length (the contract every mechanism meets,
// its bounds and overflow checks, is in test_mechanism_contract.cpp).
TEST(Rwkv7Mechanism, StateIsOneFp32MatrixPerHead) {
  const Mechanism* m = find_mechanism("rwkv7");
  ASSERT_NE(m, nullptr);
  EXPECT_NE(m->info().title.find("chunkwise"), std::string::npos);
  EXPECT_EQ(m->state_bytes(rwkv7_cell(8, 64, 8192, DType::bfloat16, Phase::decode, 2)), 2 * 8 * 64 * 64 * 4);
  EXPECT_TRUE(m->unsupported(rwkv7_cell(1, 512, 16, DType::float32)).has_value());
}

TEST(Rwkv7Mechanism, CapacityProbeIsTheDeltaRule) {
  const CapacityProbe* probe = find_mechanism("rwkv7")->capacity_probe(MechanismOptions{});
  ASSERT_NE(probe, nullptr);
  // Orthonormal keys: every write lands in its own direction, so all n <= d are recalled exactly.
  const std::int64_t d = 8;
  MatrixD keys(d, d), values(d, 3);
  for (std::int64_t i = 0; i < d; ++i) {
    keys(i, (3 * i) % d) = 1.0;
    for (std::int64_t j = 0; j < 3; ++j) values(i, j) = std::cos(static_cast<double>(i * 3 + j));
  }
  MatrixD out = probe->recall(keys, values);
  for (std::size_t i = 0; i < out.data.size(); ++i) EXPECT_NEAR(out.data[i], values.data[i], 1e-14);
  // A key written twice keeps its last value (the delta rule replaces, additive memory would sum).
  MatrixD twice(2, d), values2(2, 3);
  twice(0, 1) = twice(1, 1) = 1.0;
  values2(0, 0) = 5.0, values2(1, 0) = -1.0;
  out = probe->recall(twice, values2);
  EXPECT_NEAR(out(0, 0), -1.0, 1e-14);
  EXPECT_FALSE(probe->setting().empty());
}

TEST(Rwkv7Conformance, GenerateAndRunRoundTrip) {
  testing::expect_conformance_round_trip("rwkv7", "final_state.npy", {2, 2, 16, 16});
}

}  // namespace
}  // namespace arch_bench
