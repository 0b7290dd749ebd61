// mamba2 (Mamba-2's SSD): the fp64 reference against hand-computed values, the chunked prefill
// against the recurrent form and the reference at chunk boundaries, decode against prefill, groups,
// extreme decays, the prepared cells, the options' refusals, conformance and the capacity probe.
#include <gtest/gtest.h>

#include <cmath>

#include "core/backends/cpu/cpu_backend.hpp"
#include "mechanisms/capacity.hpp"
#include "mechanisms/mamba2/cpu.hpp"
#include "mechanisms/mamba2/inputs.hpp"
#include "mechanisms/mamba2/options.hpp"
#include "mechanisms/mamba2/reference.hpp"
#include "mechanisms/registry.hpp"
#include "runner/conformance/conformance.hpp"
#include "support/cli.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/prepared_cells.hpp"
#include "support/cli_refusals.hpp"
#include "support/capacity_checks.hpp"

namespace arch_bench {
namespace {
using testing::relative_max_error;

Cell mamba2_cell(std::int64_t heads, std::int64_t dim, std::int64_t n, std::int64_t groups, DType dtype,
                 Phase phase = Phase::prefill, std::int64_t length = 0, std::int64_t batch = 1) {
  Cell cell = testing::mechanism_cell("mamba2", heads, dim, length, dtype, phase, batch);
  cell.options.set("state_size", n);
  cell.options.set("n_groups", groups);
  return cell;
}

Mamba2Shape shape_of(const Mamba2Inputs& in) { return {in.batch, in.heads, in.groups, in.head_dim, in.state_size}; }

struct Outputs {
  std::vector<float> out, state;  // out [rows, tokens, P]; state [rows, N, P]
};

// The chunked (chunk > 0) or the recurrent (chunk = 0) prefill over every token of `in`.
template <class T>
Outputs prefill(const Mamba2Inputs& in, std::int64_t chunk) {
  const Mamba2Shape shape = shape_of(in);
  const std::vector<float> A = in.A();
  const Mamba2Parameters params{A.data(), in.dt_bias.data(), in.D.data()};
  const auto x = testing::to_storage<T>(in.x), dt = testing::to_storage<T>(in.dt_raw),
             z = testing::to_storage<T>(in.z), B = testing::to_storage<T>(in.B), C = testing::to_storage<T>(in.C);
  const Mamba2Tokens<T> tokens{x.data(), dt.data(), z.data(), B.data(), C.data()};
  std::vector<T> out(x.size());
  Outputs r{{}, std::vector<float>(shape.rows() * in.state_size * in.head_dim, 0.0f)};
  if (chunk > 0) {
    const int threads = 2;
    std::vector<float> workspace(threads * mamba2_chunk_workspace_floats(shape, chunk));
    mamba2_prefill_chunked(shape, params, in.tokens, chunk, tokens, r.state.data(), workspace.data(), threads,
                           out.data());
  } else {
    mamba2_prefill_recurrent(shape, params, in.tokens, tokens, r.state.data(), out.data());
  }
  r.out = testing::to_floats(out);
  return r;
}

// The fp64 reference: outputs [rows, tokens, P] and final states transposed to the kernels' [rows, N, P].
Outputs reference(const Mamba2Inputs& in) {
  Outputs r;
  for (std::int64_t bh = 0; bh < in.rows(); ++bh) {
    const Mamba2ReferenceResult ref = mamba2_ssd_scan(in.head_sequence(bh, in.tokens), in.head_parameters(bh % in.heads));
    r.out.insert(r.out.end(), ref.outputs.data.begin(), ref.outputs.data.end());
    for (std::int64_t s = 0; s < in.state_size; ++s) {
      for (std::int64_t i = 0; i < in.head_dim; ++i) r.state.push_back(static_cast<float>(ref.state(i, s)));
    }
  }
  return r;
}

double softplus(double x) { return std::log1p(std::exp(x)); }
double silu(double x) { return x / (1 + std::exp(-x)); }

TEST(Mamba2, ReferenceFollowsTheRecurrenceByHand) {
  // One channel, one state column, two tokens: H_0 = dt_0 x_0 B_0, H_1 = a_1 H_0 + dt_1 x_1 B_1.
  Mamba2HeadSequenceD s{MatrixD(2, 1), MatrixD(2, 1), {0.3, -0.7}, MatrixD(2, 1), MatrixD(2, 1)};
  s.x(0, 0) = 1.5, s.x(1, 0) = -2.0;
  s.z(0, 0) = 0.4, s.z(1, 0) = -1.1;
  s.B(0, 0) = 0.9, s.B(1, 0) = 1.7;
  s.C(0, 0) = -0.6, s.C(1, 0) = 0.8;
  const Mamba2HeadParametersD p{-3.0, 0.2, 0.75};
  const double dt0 = softplus(0.5), dt1 = softplus(-0.5);
  const double h0 = dt0 * 1.5 * 0.9;
  const double h1 = std::exp(dt1 * -3.0) * h0 + dt1 * -2.0 * 1.7;
  const Mamba2ReferenceResult r = mamba2_ssd_scan(s, p);
  EXPECT_NEAR(r.outputs(0, 0), (h0 * -0.6 + 0.75 * 1.5) * silu(0.4), 1e-14);
  EXPECT_NEAR(r.outputs(1, 0), (h1 * 0.8 + 0.75 * -2.0) * silu(-1.1), 1e-14);
  EXPECT_NEAR(r.state(0, 0), h1, 1e-14);
  s.B = MatrixD(2, 2);
  EXPECT_THROW(mamba2_ssd_scan(s, p), std::invalid_argument);
}

TEST(Mamba2, ChunkedEqualsRecurrentAtChunkBoundaries) {
  // L = 1, L < chunk, L = chunk, L = chunk + 1 and L not a multiple of it; P = 48 takes the
  // products' narrow column tails, N = 40 their partial vectors.
  for (const std::int64_t chunk : {16, 64}) {
    for (const std::int64_t length : {1, 5, 16, 17, 64, 65, 200}) {
      const Mamba2Inputs in = make_mamba2_inputs(mamba2_cell(4, 48, 40, 2, DType::float32), length, 31);
      const Outputs chunked = prefill<float>(in, chunk), recurrent = prefill<float>(in, 0);
      EXPECT_LT(relative_max_error(chunked.out, recurrent.out), 2e-5) << chunk << " " << length;
      EXPECT_LT(relative_max_error(chunked.state, recurrent.state), 2e-5) << chunk << " " << length;
    }
  }
}

TEST(Mamba2, BothFormsMatchTheFp64ReferenceFloat32) {
  for (const std::int64_t length : {1, 65, 257}) {
    const Mamba2Inputs in = make_mamba2_inputs(mamba2_cell(4, 64, 128, 1, DType::float32, Phase::prefill, 0, 2),
                                               length, 32);
    const Outputs ref = reference(in);
    const Outputs chunked = prefill<float>(in, 64), recurrent = prefill<float>(in, 0);
    EXPECT_LT(relative_max_error(chunked.out, ref.out), 1e-4) << length;
    EXPECT_LT(relative_max_error(recurrent.out, ref.out), 1e-4) << length;
    EXPECT_LT(relative_max_error(chunked.state, ref.state), 1e-4) << length;
  }
}

TEST(Mamba2, Bfloat16StaysWithinToleranceOfFp64) {
  const Mamba2Inputs in = make_mamba2_inputs(mamba2_cell(4, 32, 64, 2, DType::bfloat16), 150, 33);
  const Outputs ref = reference(in);
  EXPECT_LT(relative_max_error(prefill<bf16>(in, 64).out, ref.out), 1e-2);
  EXPECT_LT(relative_max_error(prefill<bf16>(in, 0).out, ref.out), 1e-2);
}

TEST(Mamba2, HeadsOfAGroupReadItsBAndCOnly) {
  // 4 heads in 2 groups: changing group 1's B and C changes heads 2 and 3 only.
  Mamba2Inputs in = make_mamba2_inputs(mamba2_cell(4, 16, 16, 2, DType::float32), 40, 34);
  const Outputs before = prefill<float>(in, 16);
  const std::int64_t group_floats = in.tokens * in.state_size;
  for (std::int64_t i = group_floats; i < 2 * group_floats; ++i) in.B[i] += 0.5f, in.C[i] -= 0.25f;
  const Outputs after = prefill<float>(in, 16);
  const std::int64_t head_floats = in.tokens * in.head_dim;
  for (std::int64_t h = 0; h < 4; ++h) {
    const std::vector<float> a(before.out.begin() + h * head_floats, before.out.begin() + (h + 1) * head_floats);
    const std::vector<float> b(after.out.begin() + h * head_floats, after.out.begin() + (h + 1) * head_floats);
    if (h < 2) EXPECT_EQ(a, b) << h;
    else EXPECT_GT(relative_max_error(a, b), 1e-3) << h;
  }
  EXPECT_LT(relative_max_error(after.out, reference(in).out), 1e-4);
}

TEST(Mamba2, ExtremeDecaysMatchTheReference) {
  // Near-total forgetting (dt ~ 30, A = -16: a_t = e^-480, the running log decay passes -10^4 in one
  // chunk) and almost none (A ~ -2e-9: a_t = 1 - 1e-10, the state adds up 300 tokens).
  for (const bool forget : {true, false}) {
    Mamba2Inputs in = make_mamba2_inputs(mamba2_cell(2, 32, 32, 1, DType::float32), 300, 35);
    for (std::int64_t h = 0; h < in.heads; ++h) {
      in.A_log[h] = forget ? std::log(16.0f) : -20.0f;
      if (forget) in.dt_bias[h] = 30.0f;
    }
    const Outputs ref = reference(in);
    const Outputs chunked = prefill<float>(in, 64);
    for (const float v : chunked.out) ASSERT_TRUE(std::isfinite(v));
    EXPECT_LT(relative_max_error(chunked.out, ref.out), 1e-4) << forget;
    EXPECT_LT(relative_max_error(chunked.state, ref.state), 1e-4) << forget;
  }
}

TEST(Mamba2, DecodeStepAfterPrefillEqualsTheNextPrefillRow) {
  const std::int64_t length = 70;
  const Mamba2Inputs in = make_mamba2_inputs(mamba2_cell(4, 32, 48, 2, DType::float32, Phase::prefill, 0, 2),
                                             length + 1, 36);
  const Outputs full = prefill<float>(in, 32);
  // The context: every row's first `length` tokens, prefilled, then one decode step.
  Mamba2Inputs context = in;
  context.tokens = length;
  const auto first = [&](const std::vector<float>& v, std::int64_t width, std::int64_t rows) {
    std::vector<float> out;
    for (std::int64_t r = 0; r < rows; ++r) {
      out.insert(out.end(), v.begin() + r * in.tokens * width, v.begin() + (r * in.tokens + length) * width);
    }
    return out;
  };
  const std::int64_t group_rows = in.batch * in.groups;
  context.x = first(in.x, in.head_dim, in.rows());
  context.z = first(in.z, in.head_dim, in.rows());
  context.dt_raw = first(in.dt_raw, 1, in.rows());
  context.B = first(in.B, in.state_size, group_rows);
  context.C = first(in.C, in.state_size, group_rows);
  Outputs stepped = prefill<float>(context, 32);
  const auto token = [&](const std::vector<float>& v, std::int64_t width, std::int64_t rows) {
    std::vector<float> out;
    for (std::int64_t r = 0; r < rows; ++r) {
      out.insert(out.end(), v.begin() + (r * in.tokens + length) * width, v.begin() + (r * in.tokens + length + 1) * width);
    }
    return out;
  };
  const std::vector<float> x = token(in.x, in.head_dim, in.rows()), z = token(in.z, in.head_dim, in.rows()),
                           dt = token(in.dt_raw, 1, in.rows()), B = token(in.B, in.state_size, group_rows),
                           C = token(in.C, in.state_size, group_rows);
  const std::vector<float> A = in.A();
  std::vector<float> out(x.size());
  mamba2_decode_step(shape_of(in), {A.data(), in.dt_bias.data(), in.D.data()},
                     Mamba2Tokens<float>{x.data(), dt.data(), z.data(), B.data(), C.data()}, stepped.state.data(),
                     out.data());
  EXPECT_LT(relative_max_error(out, token(full.out, in.head_dim, in.rows())), 1e-5);
  EXPECT_LT(relative_max_error(stepped.state, full.state), 1e-5);
}

TEST(Mamba2, PreparedCellsPassTheirCheckAndRunAllocatesNothing) {
  const Mechanism* mamba2 = find_mechanism("mamba2");
  ASSERT_NE(mamba2, nullptr);
  CpuBackend backend;
  for (const Phase phase : {Phase::decode, Phase::prefill}) {
    for (const DType dtype : {DType::float32, DType::bfloat16}) {
      for (const std::int64_t length : {1, 65, 130}) {
        Cell cell = mamba2_cell(4, 32, 64, 2, dtype, phase, length, 2);
        cell.options.set("ssd_chunk", std::int64_t{32});
        const testing::PreparedRun run = testing::run_prepared(*mamba2, cell, 5, backend);
        EXPECT_TRUE(run.accuracy.output_finite);
        EXPECT_LT(run.accuracy.max_rel_error, dtype == DType::float32 ? 1e-4 : 1e-2) << length;
        EXPECT_EQ(run.run_allocations, 0);
        EXPECT_LE(run.prepared_bytes, mamba2->predicted_peak_bytes(cell));
      }
    }
  }
}

TEST(Mamba2, StateIsOneFp32PByNMatrixPerHeadAndCostsAreCounted) {
  const Mechanism* mamba2 = find_mechanism("mamba2");
  ASSERT_NE(mamba2, nullptr);
  // Defaults: N = 128 (the published configurations' d_state), one group, chunk 64.
  const Cell cell = testing::mechanism_cell("mamba2", 8, 64, 8192, DType::bfloat16, Phase::decode);
  EXPECT_EQ(mamba2->state_bytes(cell), 8 * 64 * 128 * 4);
  const Cost decode = mamba2->cost(cell);
  EXPECT_EQ(decode.flops, 8.0 * (5 * 128 * 64 + 7 * 64 + 4));
  // State read and written, x, z, out (64 each) and dt per head, B and C (128 each) in bf16, 3 fp32 parameters per head.
  EXPECT_EQ(decode.bytes_moved, 2.0 * 8 * 64 * 128 * 4 + 8 * (3 * 64 + 1) * 2 + 2 * 128 * 2 + 8 * 3 * 4);
  Cell prefill = cell;
  prefill.phase = Phase::prefill;
  // Prefill work grows linearly in L (chunked): twice the tokens, about twice the FLOPs.
  prefill.sequence_length = 4096;
  const double half = mamba2->cost(prefill).flops;
  prefill.sequence_length = 8192;
  EXPECT_NEAR(mamba2->cost(prefill).flops / half, 2.0, 1e-9);
}

TEST(Mamba2, UnsupportedOptionsAreRefusedWithTheirReason) {
  const Mechanism* mamba2 = find_mechanism("mamba2");
  ASSERT_NE(mamba2, nullptr);
  EXPECT_FALSE(mamba2->unsupported(mamba2_cell(8, 64, 128, 4, DType::float32)).has_value());
  const auto groups = mamba2->unsupported(mamba2_cell(8, 64, 128, 3, DType::float32));
  ASSERT_TRUE(groups.has_value());
  EXPECT_NE(groups->find("n_groups to divide the heads"), std::string::npos) << *groups;
  EXPECT_TRUE(mamba2->unsupported(mamba2_cell(8, 64, 257, 1, DType::float32)).has_value());
  EXPECT_TRUE(mamba2->unsupported(mamba2_cell(8, 512, 64, 1, DType::float32)).has_value());
  Cell chunk = mamba2_cell(8, 64, 64, 1, DType::float32);
  chunk.options.set("ssd_chunk", std::int64_t{512});
  EXPECT_TRUE(mamba2->unsupported(chunk).has_value());
}

TEST(Mamba2, RunRefusesGroupsThatDoNotDivideTheHeadsWithExitTwo) {
  testing::expect_run_refused("--mode landscape --candidates mamba2 --n-groups 3 --sequence-lengths 16 --quiet",
                              "n_groups");
  testing::expect_run_refused("--mode landscape --candidates mamba2 --ssd-chunk 0 --sequence-lengths 16 --quiet", "");
}

TEST(Mamba2, ConformanceRoundTripPassesInBothDtypes) {
  for (const DType dtype : {DType::float32, DType::bfloat16}) {
    testing::TempFolder folder;
    const ConformanceResult result = testing::generate_and_run_conformance("mamba2", {2, 2, 80, 16}, dtype, folder);
    EXPECT_TRUE(result.passed) << result.manifest.dump(2);
    EXPECT_EQ(result.manifest["options"]["state_size"], 128) << result.manifest.dump(2);
  }
}

TEST(Mamba2, CapacityProbeIsTheAdditiveStateAddressedByNWideKeys) {
  const Mechanism* mamba2 = find_mechanism("mamba2");
  ASSERT_NE(mamba2, nullptr);
  MechanismOptions options;
  options.set("state_size", std::int64_t{16});
  const CapacityProbe* probe = mamba2->capacity_probe(options);
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(probe->key_dim(64), 16);
  testing::expect_one_hot_keys_recalled(*probe, /*n=*/16, /*channels=*/8, 1e-12);
}

}  // namespace
}  // namespace arch_bench
