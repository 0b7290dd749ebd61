// RWKV-6 (Finch): the fp64 recurrent reference, the CPU kernels (recurrent step, chunkwise prefill
// with cumulative log-decays), the mechanism contract and the conformance round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "mechanisms/capacity.hpp"
#include "core/bf16.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/rwkv6/cpu.hpp"
#include "mechanisms/rwkv/rwkv6/reference.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "runner/conformance/conformance.hpp"
#include "support/cli.hpp"
#include "support/conformance_round_trip.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/rwkv_problem.hpp"
#include "support/capacity_checks.hpp"

namespace arch_bench {
namespace {

Cell rwkv6_cell(std::int64_t heads, std::int64_t dim, std::int64_t length, DType dtype, Phase phase = Phase::prefill,
                std::int64_t batch = 1) {
  return testing::mechanism_cell("rwkv6", heads, dim, length, dtype, phase, batch);
}

// A layer's inputs in kernel storage, with each kernel run from a zero state.
template <class T>
struct Problem : testing::RwkvProblem<T> {
  using Base = testing::RwkvProblem<T>;
  using Base::in, Base::shape, Base::storage;
  Problem(const Cell& cell, std::int64_t tokens, std::uint64_t seed = 7) : Base(cell, tokens, seed, RwkvVersion::v6) {}
  RwkvTokens<T> tokens() const {
    return {storage[kRwkvR].data(), storage[kRwkvK].data(), storage[kRwkvV].data(), storage[kRwkvDecay].data()};
  }
  RwkvParameters params() const { return {nullptr, in.u.data()}; }
  std::vector<float> run(bool chunkwise, std::vector<float>* state_out = nullptr,
                         std::vector<float> state = {}) const {
    if (state.empty()) state.assign(rwkv6_state_floats(shape), 0.0f);
    std::vector<T> out(storage[kRwkvK].size());
    if (chunkwise) {
      rwkv6_prefill_chunkwise(shape, params(), in.tokens, tokens(), state.data(), out.data());
    } else {
      rwkv6_recurrent(shape, params(), in.tokens, tokens(), state.data(), out.data());
    }
    if (state_out) *state_out = state;
    return testing::to_floats(out);
  }
  // Every row of every head against the fp64 reference.
  double against_reference(const std::vector<float>& out) const {
    return this->relative_error_against(out, [&](std::int64_t bh) {
      return rwkv6_reference(in.head_matrix(kRwkvR, bh, in.tokens), in.head_matrix(kRwkvK, bh, in.tokens),
                             in.head_matrix(kRwkvV, bh, in.tokens), in.head_matrix(kRwkvDecay, bh, in.tokens),
                             in.parameter(in.u, bh));
    });
  }
};

TEST(Rwkv6Reference, RecurrenceEqualsTheUnrolledSum) {
  // o_t = sum_{s<t} (r_t * prod_{s<m<t} w_m ... ) : check against the closed form
  // o_t[j] = sum_i r_ti (sum_{s<t} (prod_{s<m<=t-1} w_mi) k_si v_sj + u_i k_ti v_tj).
  const Problem<float> p(rwkv6_cell(1, 4, 9, DType::float32), 9);
  const std::int64_t T = 9, D = 4;
  const MatrixD r = p.in.head_matrix(kRwkvR, 0, T), k = p.in.head_matrix(kRwkvK, 0, T);
  const MatrixD v = p.in.head_matrix(kRwkvV, 0, T), d = p.in.head_matrix(kRwkvDecay, 0, T);
  const std::vector<double> u = p.in.parameter(p.in.u, 0);
  const RwkvMatrixResult ref = rwkv6_reference(r, k, v, d, u);
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t j = 0; j < D; ++j) {
      double o = 0;
      for (std::int64_t i = 0; i < D; ++i) {
        for (std::int64_t s = 0; s < t; ++s) {
          double decay = 1;
          for (std::int64_t m = s + 1; m <= t - 1; ++m) decay *= std::exp(-std::exp(d(m, i)));
          o += r(t, i) * decay * k(s, i) * v(s, j);
        }
        o += r(t, i) * u[i] * k(t, i) * v(t, j);
      }
      EXPECT_NEAR(ref.outputs(t, j), o, 1e-12 * std::fmax(1.0, std::fabs(o)));
    }
  }
  EXPECT_THROW(rwkv6_reference(r, k, v, MatrixD(T, D + 1), u), std::invalid_argument);
}

TEST(Rwkv6Kernel, RecurrentMatchesReferenceFp32) {
  const Problem<float> p(rwkv6_cell(2, 16, 200, DType::float32, Phase::prefill, 2), 200);
  const double error = p.against_reference(p.run(false));
  EXPECT_LT(error, 1e-5);
  std::printf("recurrent fp32 vs fp64 reference: %.3g\n", error);
}

// The recurrence takes 8 channels at a time where it can: head dims off the vector (7, 12) take the
// scalar tails, 40 and 72 the column blocks of 32 and 8 floats and their remainders.
TEST(Rwkv6Kernel, RecurrentMatchesReferenceAtHeadDimsOffTheVector) {
  for (std::int64_t dim : {7, 12, 40, 72}) {
    const Problem<float> p(rwkv6_cell(1, dim, 70, DType::float32), 70);
    EXPECT_LT(p.against_reference(p.run(false)), 1e-5) << "dim " << dim;
  }
}

TEST(Rwkv6Kernel, ChunkwiseEqualsRecurrentAtLengthsAroundTheChunk) {
  for (std::int64_t tokens : {1, 15, 16, 17, 63, 64, 65, 129, 300}) {
    const Problem<float> p(rwkv6_cell(2, 32, tokens, DType::float32), tokens);
    std::vector<float> chunk_state, recurrent_state;
    const std::vector<float> chunk = p.run(true, &chunk_state), recurrent = p.run(false, &recurrent_state);
    const double out_diff = testing::relative_max_error(chunk, recurrent);
    const double state_diff = testing::relative_max_error(chunk_state, recurrent_state);
    EXPECT_LT(out_diff, 1e-5) << "L = " << tokens;
    EXPECT_LT(state_diff, 1e-5) << "L = " << tokens;
    EXPECT_LT(p.against_reference(chunk), 1e-5) << "L = " << tokens;
    std::printf("L = %3ld: chunkwise vs recurrent outputs %.3g, state %.3g\n", static_cast<long>(tokens), out_diff,
                state_diff);
  }
}

TEST(Rwkv6Kernel, ChunkwiseStaysFiniteAndExactWithExtremeDecays) {
  // d up to 6 (log w = -e^6 = -403: a chunk's cumulative log-decay reaches -10^4, far past e^-88)
  // and down to -12 (w = 1 - 6e-6): nothing overflows, and the result is the recurrence's.
  Problem<float> p(rwkv6_cell(1, 32, 200, DType::float32), 200);
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<float> spread(-12.0f, 6.0f);
  for (float& d : p.in.sequence[kRwkvDecay]) d = spread(rng);
  p.restore();
  const std::vector<float> chunk = p.run(true), recurrent = p.run(false);
  for (float x : chunk) ASSERT_TRUE(std::isfinite(x));
  EXPECT_LT(testing::relative_max_error(chunk, recurrent), 1e-5);
  EXPECT_LT(p.against_reference(chunk), 1e-5);
}

// A chunk whose decays sum to at most 80 nats on every channel takes the factorised products, one past
// it the sub-chunk path: chunks of 79, 81, 30 and 400 nats (every token of a chunk the same log w,
// noise on top for the last) hand the state from one path to the other, and the result is the recurrence's.
TEST(Rwkv6Kernel, ChunkwiseFactorisedAndSubChunkPathsAgreeAcrossTheBound) {
  const std::int64_t tokens = 4 * kRwkv6Chunk + 9, dim = 32;
  Problem<float> p(rwkv6_cell(1, dim, tokens, DType::float32), tokens);
  const double nats[] = {79.0, 81.0, 30.0, 400.0, 50.0};
  std::mt19937_64 rng(3);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t chunk = t / kRwkv6Chunk;
    // log w = -exp(d) = -nats / kRwkv6Chunk; the 400-nat chunk varies per channel around it.
    const float d = static_cast<float>(std::log(nats[chunk] / static_cast<double>(kRwkv6Chunk)));
    for (std::int64_t i = 0; i < dim; ++i) p.in.sequence[kRwkvDecay][t * dim + i] = chunk == 3 ? d + noise(rng) : d;
  }
  p.restore();
  std::vector<float> chunk_state, recurrent_state;
  const std::vector<float> chunk = p.run(true, &chunk_state), recurrent = p.run(false, &recurrent_state);
  for (float x : chunk) ASSERT_TRUE(std::isfinite(x));
  EXPECT_LT(testing::relative_max_error(chunk, recurrent), 1e-5);
  EXPECT_LT(testing::relative_max_error(chunk_state, recurrent_state), 1e-5);
  EXPECT_LT(p.against_reference(chunk), 1e-5);
}

TEST(Rwkv6Kernel, ChunkwiseContinuesFromACarriedState) {
  const std::int64_t tokens = 150, split = 70;
  const Problem<float> whole(rwkv6_cell(1, 16, tokens, DType::float32), tokens);
  std::vector<float> whole_state;
  const std::vector<float> expected = whole.run(false, &whole_state);
  // The same inputs cut in two: [0, split) then [split, tokens) from the carried state.
  auto part = [&](std::int64_t begin, std::int64_t count) {
    Problem<float> p = whole;
    p.in.tokens = count;
    for (auto& x : p.in.sequence) {
      if (!x.empty()) x = std::vector<float>(x.begin() + begin * 16, x.begin() + (begin + count) * 16);
    }
    p.restore();
    return p;
  };
  std::vector<float> state;
  const std::vector<float> first = part(0, split).run(true, &state);
  const std::vector<float> second = part(split, tokens - split).run(true, &state, state);
  std::vector<float> joined = first;
  joined.insert(joined.end(), second.begin(), second.end());
  EXPECT_LT(testing::relative_max_error(joined, expected), 1e-5);
  EXPECT_LT(testing::relative_max_error(state, whole_state), 1e-5);
}

TEST(Rwkv6Kernel, DecodeStepAtTEqualsPrefillRowT) {
  const std::int64_t tokens = 130, dim = 16;
  const Problem<float> p(rwkv6_cell(2, dim, tokens, DType::float32), tokens);
  const std::vector<float> prefill = p.run(true);
  std::vector<float> state(rwkv6_state_floats(p.shape), 0.0f), out(2 * dim), decoded(prefill.size());
  std::vector<std::vector<float>> token(kRwkvInputCount, std::vector<float>(2 * dim));
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int i = 0; i < 4; ++i) {
      for (std::int64_t bh = 0; bh < 2; ++bh) {
        std::copy_n(p.storage[i].begin() + (bh * tokens + t) * dim, dim, token[i].begin() + bh * dim);
      }
    }
    rwkv6_recurrent(p.shape, p.params(), 1,
                    RwkvTokens<float>{token[0].data(), token[1].data(), token[2].data(), token[3].data()},
                    state.data(), out.data());
    for (std::int64_t bh = 0; bh < 2; ++bh) {
      std::copy_n(out.begin() + bh * dim, dim, decoded.begin() + (bh * tokens + t) * dim);
    }
  }
  const double error = testing::relative_max_error(decoded, prefill);
  EXPECT_LT(error, 1e-5);
  std::printf("decode steps vs prefill rows over %ld tokens: %.3g\n", static_cast<long>(tokens), error);
}

TEST(Rwkv6Kernel, Bf16StorageWithinTolerance) {
  const Problem<bf16> p(rwkv6_cell(2, 64, 700, DType::bfloat16), 700);
  const double chunk = p.against_reference(p.run(true)), recurrent = p.against_reference(p.run(false));
  EXPECT_LT(chunk, dtype_tolerance(DType::bfloat16));
  EXPECT_LT(recurrent, dtype_tolerance(DType::bfloat16));
  std::printf("bf16: chunkwise %.3g, recurrent %.3g\n", chunk, recurrent);
}

// The state is one fp32 d x d matrix per head, at every length (the contract every mechanism meets,
// its bounds and overflow checks, is in test_mechanism_contract.cpp).
TEST(Rwkv6Mechanism, StateIsOneFp32MatrixPerHead) {
  const Mechanism* m = find_mechanism("rwkv6");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->state_bytes(rwkv6_cell(8, 64, 8192, DType::bfloat16, Phase::decode, 2)), 2 * 8 * 64 * 64 * 4);
  EXPECT_TRUE(m->unsupported(rwkv6_cell(1, 512, 16, DType::float32)).has_value());
}

TEST(Rwkv6Mechanism, CapacityProbeRecallsOrthonormalKeysExactly) {
  const CapacityProbe* probe = find_mechanism("rwkv6")->capacity_probe(MechanismOptions{});
  ASSERT_NE(probe, nullptr);
  testing::expect_one_hot_keys_recalled(*probe, /*n=*/8, /*channels=*/5, 1e-14);
  EXPECT_FALSE(probe->setting().empty());
}

TEST(Rwkv6Conformance, GenerateAndRunRoundTrip) {
  testing::expect_conformance_round_trip("rwkv6", "final_state.npy", {2, 2, 16, 16});
}

}  // namespace
}  // namespace arch_bench
