// RWKV-4's WKV operator (seed 002): the naive and stable fp64 references, the stable CPU kernel
// (decode step, prefill), the mechanism contract and the conformance round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "mechanisms/capacity.hpp"
#include "core/bf16.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/rwkv4/cpu.hpp"
#include "mechanisms/rwkv/rwkv4/reference.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "runner/conformance/conformance.hpp"
#include "support/cli.hpp"
#include "support/conformance_round_trip.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/prepared_cells.hpp"

namespace arch_bench {
namespace {

Cell rwkv4_cell(std::int64_t heads, std::int64_t dim, std::int64_t length, DType dtype, Phase phase = Phase::prefill,
                std::int64_t batch = 1) {
  return testing::mechanism_cell("rwkv4", heads, dim, length, dtype, phase, batch);
}

// One head's inputs as the reference sees them, and the kernel's prefill over them.
struct Head {
  MatrixD k, v;
  std::vector<double> w, u;
};

Head drawn_head(std::int64_t tokens, std::int64_t dim, std::uint64_t seed) {
  const RwkvInputs in = make_rwkv_inputs(rwkv4_cell(1, dim, tokens, DType::float32), tokens, seed, RwkvVersion::v4);
  return {in.head_matrix(kRwkvK, 0, tokens), in.head_matrix(kRwkvV, 0, tokens), in.parameter(in.w, 0),
          in.parameter(in.u, 0)};
}

// The fp32 kernel over one head's (float-representable) inputs: prefill or decode token by token.
MatrixD kernel_outputs(const Head& h, bool decode, std::vector<float>* state_out = nullptr) {
  const std::int64_t tokens = h.k.rows, dim = h.k.cols;
  const RwkvShape shape{1, 1, dim};
  std::vector<float> k(h.k.data.begin(), h.k.data.end()), v(h.v.data.begin(), h.v.data.end());
  std::vector<float> w(h.w.begin(), h.w.end()), u(h.u.begin(), h.u.end()), out(k.size());
  std::vector<float> state(rwkv4_state_floats(shape));
  rwkv4_reset_state(shape, state.data());
  const RwkvParameters params{w.data(), u.data()};
  if (decode) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      rwkv4_decode_step(shape, params, k.data() + t * dim, v.data() + t * dim, state.data(), out.data() + t * dim);
    }
  } else {
    rwkv4_prefill(shape, params, tokens, k.data(), v.data(), state.data(), out.data());
  }
  if (state_out) *state_out = state;
  MatrixD m(tokens, dim);
  std::copy(out.begin(), out.end(), m.data.begin());
  return m;
}

// max |a - b| / max |b|
double relative(const MatrixD& a, const MatrixD& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    diff = std::fmax(diff, std::fabs(a.data[i] - b.data[i]));
    scale = std::fmax(scale, std::fabs(b.data[i]));
  }
  return diff / scale;
}

bool all_finite(const MatrixD& m) {
  for (double x : m.data) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

TEST(Rwkv4Reference, NaiveFormulaByHandForTwoTokens) {
  // One channel, w = 0.5, u = 0.25.
  MatrixD k(2, 1), v(2, 1);
  k(0, 0) = 0.3, v(0, 0) = 2.0, k(1, 0) = -0.7, v(1, 0) = -1.0;
  const MatrixD out = rwkv4_wkv_naive<double>(k, v, {0.5}, {0.25});
  EXPECT_NEAR(out(0, 0), 2.0, 1e-15);  // only the current token
  const double past = std::exp(0.3), now = std::exp(0.25 - 0.7);
  EXPECT_NEAR(out(1, 0), (past * 2.0 + now * -1.0) / (past + now), 1e-15);
  EXPECT_THROW(rwkv4_wkv_naive<double>(MatrixD(0, 1), MatrixD(0, 1), {0.5}, {0.25}), std::invalid_argument);
  EXPECT_THROW(rwkv4_wkv_stable(k, v, {0.5, 1.0}, {0.25}), std::invalid_argument);
}

TEST(Rwkv4Reference, StableFormEqualsNaiveFormulaInFp64) {
  const Head h = drawn_head(120, 16, 3);
  const MatrixD naive = rwkv4_wkv_naive<double>(h.k, h.v, h.w, h.u);
  const Rwkv4ReferenceResult stable = rwkv4_wkv_stable(h.k, h.v, h.w, h.u);
  EXPECT_LT(relative(stable.outputs, naive), 1e-13);
  // The state is the two sums relative to e^{p}: check it against the sums directly.
  for (std::int64_t c = 0; c < 16; ++c) {
    double a = 0, b = 0;
    for (std::int64_t i = 0; i < 120; ++i) {
      const double weight = std::exp(-static_cast<double>(119 - i) * h.w[c] + h.k(i, c));
      a += weight * h.v(i, c);
      b += weight;
    }
    EXPECT_NEAR(stable.a[c] * std::exp(stable.p[c]), a, 1e-11 * std::fabs(b) * 10);
    EXPECT_NEAR(stable.b[c] * std::exp(stable.p[c]) / b, 1.0, 1e-12);
  }
}

TEST(Rwkv4Kernel, StableKernelStaysFiniteWhereTheNaiveFormOverflows) {
  Head h = drawn_head(64, 8, 5);
  // Keys of 100: e^{100} is beyond fp32 (3.4e38), within fp64.
  for (std::int64_t t = 0; t < 64; t += 3) {
    for (std::int64_t c = 0; c < 8; ++c) h.k(t, c) = 100.0 - 0.5 * static_cast<double>(c);
  }
  const MatrixD naive64 = rwkv4_wkv_naive<double>(h.k, h.v, h.w, h.u);
  const MatrixD naive32 = rwkv4_wkv_naive<float>(h.k, h.v, h.w, h.u);
  ASSERT_TRUE(all_finite(naive64));
  EXPECT_FALSE(all_finite(naive32));  // the naive form breaks in fp32 ...
  const MatrixD prefill = kernel_outputs(h, false), decode = kernel_outputs(h, true);
  EXPECT_TRUE(all_finite(prefill));  // ... the running-max kernel does not
  // Exponents near 100 carry fp32's absolute rounding of 100 x 2^-24 = 6e-6 into every weight.
  EXPECT_LT(relative(prefill, naive64), 2e-5);
  EXPECT_LT(relative(decode, naive64), 2e-5);
  std::printf("k = 100: fp32 stable vs fp64 naive %.3g\n", relative(prefill, naive64));

  // Keys of 1000 overflow even the fp64 naive form; the stable forms agree with each other.
  for (std::int64_t c = 0; c < 8; ++c) h.k(10, c) = 1000.0;
  EXPECT_FALSE(all_finite(rwkv4_wkv_naive<double>(h.k, h.v, h.w, h.u)));
  const Rwkv4ReferenceResult stable = rwkv4_wkv_stable(h.k, h.v, h.w, h.u);
  const MatrixD big = kernel_outputs(h, false);
  EXPECT_TRUE(all_finite(big));
  EXPECT_LT(relative(big, stable.outputs), 2e-5);
}

TEST(Rwkv4Kernel, PrefillMatchesNaiveReferenceFp32) {
  const Head h = drawn_head(300, 32, 9);
  const MatrixD naive = rwkv4_wkv_naive<double>(h.k, h.v, h.w, h.u);
  std::vector<float> state;
  const double error = relative(kernel_outputs(h, false, &state), naive);
  EXPECT_LT(error, 2e-6);
  // The final state against the fp64 one.
  const Rwkv4ReferenceResult ref = rwkv4_wkv_stable(h.k, h.v, h.w, h.u);
  for (std::int64_t c = 0; c < 32; ++c) {
    EXPECT_NEAR(state[2 * 32 + c], ref.p[c], 1e-5 * std::fmax(1.0, std::fabs(ref.p[c])));
    EXPECT_NEAR(state[32 + c], ref.b[c], 1e-5 * ref.b[c]);
  }
  std::printf("fp32 prefill vs naive fp64: %.3g\n", error);
}

TEST(Rwkv4Kernel, DecodeStepAtTEqualsPrefillRowT) {
  const Head h = drawn_head(257, 64, 11);
  std::vector<float> prefill_state, decode_state;
  const MatrixD prefill = kernel_outputs(h, false, &prefill_state);
  const MatrixD decode = kernel_outputs(h, true, &decode_state);
  EXPECT_LT(relative(decode, prefill), 1e-6);
  for (std::size_t i = 0; i < prefill_state.size(); ++i) {
    EXPECT_NEAR(decode_state[i], prefill_state[i], 1e-6 * std::fmax(1.0f, std::fabs(prefill_state[i])));
  }
}

// The state is three fp32 numbers per channel (numerator, denominator, running max), at every length
// (the contract every mechanism meets is in test_mechanism_contract.cpp).
TEST(Rwkv4Mechanism, StateIsThreeFp32NumbersPerChannel) {
  const Mechanism* m = find_mechanism("rwkv4");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->state_bytes(rwkv4_cell(8, 64, 8192, DType::bfloat16, Phase::decode, 2)), 2 * 8 * 64 * 3 * 4);
}

// A decode step of 4096 channels or more is split over the OpenMP team (cpu.cpp); the smaller
// cells above run it on the calling thread.
TEST(Rwkv4Mechanism, DecodeSplitOverTheTeamIsWithinTolerance) {
  const Mechanism* m = find_mechanism("rwkv4");
  ASSERT_NE(m, nullptr);
  CpuBackend backend;
  const Cell cell = rwkv4_cell(64, 64, 40, DType::float32, Phase::decode, 2);
  const testing::PreparedRun run = testing::run_prepared(*m, cell, 7, backend);
  EXPECT_EQ(run.run_allocations, 0);
  EXPECT_TRUE(run.accuracy.output_finite);
  EXPECT_LT(run.accuracy.max_rel_error, dtype_tolerance(DType::float32));
  EXPECT_EQ(run.accuracy.rows_checked, 2 * 64);
}

TEST(Rwkv4Mechanism, CapacityProbeReadsTheSameWeightedMeanForEveryKey) {
  const CapacityProbe* probe = find_mechanism("rwkv4")->capacity_probe(MechanismOptions{});
  ASSERT_NE(probe, nullptr);
  MatrixD keys(4, 3), values(4, 3);
  for (std::int64_t i = 0; i < 4; ++i) {
    keys(i, i % 3) = 1.0;
    for (std::int64_t c = 0; c < 3; ++c) values(i, c) = static_cast<double>(i + c);
  }
  const MatrixD out = probe->recall(keys, values);
  for (std::int64_t i = 1; i < 4; ++i) {
    for (std::int64_t c = 0; c < 3; ++c) EXPECT_DOUBLE_EQ(out(i, c), out(0, c));
  }
  EXPECT_THROW(probe->recall(keys, MatrixD(4, 2)), std::invalid_argument);
  EXPECT_FALSE(probe->setting().empty());
}

TEST(Rwkv4Conformance, GenerateAndRunRoundTrip) {
  testing::expect_conformance_round_trip("rwkv4", "final_max.npy", {2, 2, 16});
}

}  // namespace
}  // namespace arch_bench
