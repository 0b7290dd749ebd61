// Mamba selective scan (S6): the fp64 reference, the CPU kernels (decode step, chunked parallel
// scan, sequential scan) and the mechanism contract.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/mamba/cpu.hpp"
#include "mechanisms/mamba/inputs.hpp"
#include "mechanisms/mamba/reference.hpp"
#include "mechanisms/registry.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "support/prepared_cells.hpp"

namespace arch_bench {
namespace {

Cell mamba_cell(std::int64_t batch, std::int64_t heads, std::int64_t head_dim, DType dtype,
                std::int64_t state_size = 16, Phase phase = Phase::prefill, std::int64_t length = 0) {
  Cell cell;
  cell.mechanism = "mamba";
  cell.phase = phase;
  cell.sequence_length = length;
  cell.batch = batch;
  cell.heads = heads;
  cell.head_dim = head_dim;
  cell.dtype = dtype;
  cell.options.set("state_size", static_cast<std::int64_t>(state_size));
  return cell;
}

// One layer's inputs in kernel storage, with helpers to run each kernel from a zero state.
template <class T>
struct Problem {
  explicit Problem(const Cell& cell, std::int64_t tokens, std::uint64_t seed = 7)
      : inputs(make_mamba_inputs(cell, tokens, seed)),
        shape{inputs.batch, inputs.channels, inputs.state_size},
        A(inputs.A()) {
    restore();
  }

  // (Re)writes the storage copies from `inputs` (after a test edits them).
  void restore() {
    u = to_storage(inputs.u);
    dt_raw = to_storage(inputs.dt_raw);
    z = to_storage(inputs.z);
    B = to_storage(inputs.B);
    C = to_storage(inputs.C);
  }
  static std::vector<T> to_storage(const std::vector<float>& x) {
    std::vector<T> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = from_float<T>(x[i]);
    return out;
  }

  // The same layer over tokens [begin, begin + count) only.
  Problem slice(std::int64_t begin, std::int64_t count) const {
    Problem part = *this;
    MambaInputs& in = part.inputs;
    const std::int64_t n = shape.state_size;
    in.tokens = count;
    for (auto [whole, cut] : {std::pair{&inputs.u, &in.u}, {&inputs.dt_raw, &in.dt_raw}, {&inputs.z, &in.z}}) {
      cut->clear();
      for (std::int64_t r = 0; r < shape.rows(); ++r) {
        cut->insert(cut->end(), whole->begin() + r * tokens() + begin, whole->begin() + r * tokens() + begin + count);
      }
    }
    for (auto [whole, cut] : {std::pair{&inputs.B, &in.B}, {&inputs.C, &in.C}}) {
      cut->clear();
      for (std::int64_t b = 0; b < shape.batch; ++b) {
        const auto first = whole->begin() + (b * tokens() + begin) * n;
        cut->insert(cut->end(), first, first + count * n);
      }
    }
    part.restore();
    return part;
  }

  std::int64_t tokens() const { return inputs.tokens; }
  MambaParameters params() const { return {A.data(), inputs.dt_bias.data(), inputs.D.data()}; }
  MambaTokens<T> sequence() const { return {u.data(), dt_raw.data(), z.data(), B.data(), C.data()}; }
  std::vector<float> zero_state() const { return std::vector<float>(shape.rows() * shape.state_size, 0.0f); }

  std::vector<T> chunked(std::int64_t chunk, std::vector<float>* state_out = nullptr) const {
    std::vector<float> state = zero_state();
    std::vector<float> workspace(mamba_prefill_workspace_floats(shape, tokens(), chunk));
    std::vector<T> out(shape.rows() * tokens());
    mamba_prefill_chunked(shape, params(), tokens(), chunk, sequence(), state.data(), workspace.data(), out.data());
    if (state_out) *state_out = state;
    return out;
  }
  std::vector<T> sequential(std::vector<float>* state_out = nullptr) const {
    std::vector<float> state = zero_state();
    std::vector<T> out(shape.rows() * tokens());
    mamba_prefill_sequential(shape, params(), tokens(), sequence(), state.data(), out.data());
    if (state_out) *state_out = state;
    return out;
  }

  // Kernel outputs (channel-major) against the fp64 reference of every batch element, all rows.
  Accuracy against_reference(const std::vector<T>& out) const {
    ErrorAccumulator errors;
    const MambaParametersD p = inputs.reference_parameters();
    std::vector<T> gathered(shape.channels);
    for (std::int64_t b = 0; b < shape.batch; ++b) {
      const MambaReferenceResult ref = mamba_selective_scan(inputs.reference_sequence(b, tokens()), p);
      for (std::int64_t t = 0; t < tokens(); ++t) {
        for (std::int64_t c = 0; c < shape.channels; ++c) gathered[c] = out[(b * shape.channels + c) * tokens() + t];
        errors.add_row(gathered.data(), ref.outputs.row(t), shape.channels);
      }
    }
    return errors.finish();
  }

  MambaInputs inputs;
  MambaShape shape;
  std::vector<float> A;
  std::vector<T> u, dt_raw, z, B, C;
};

// max |x - y| / max |y| over two outputs of equal size.
template <class T>
double relative_difference(const std::vector<T>& x, const std::vector<T>& y) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff = std::fmax(diff, std::fabs(double(to_float(x[i])) - double(to_float(y[i]))));
    scale = std::fmax(scale, std::fabs(double(to_float(y[i]))));
  }
  return scale > 0 ? diff / scale : diff;
}

// --- reference --------------------------------------------------------------------------------

MambaSequenceD tiny_sequence(std::int64_t tokens, std::int64_t channels, std::int64_t n) {
  return {MatrixD(tokens, channels), MatrixD(tokens, channels), MatrixD(tokens, channels), MatrixD(tokens, n),
          MatrixD(tokens, n)};
}
MambaParametersD tiny_parameters(std::int64_t channels, std::int64_t n) {
  return {MatrixD(channels, n), std::vector<double>(channels, 0.0), std::vector<double>(channels, 1.0)};
}

TEST(MambaReference, RejectsEmptyAndMismatchedInputs) {
  EXPECT_THROW(mamba_selective_scan(tiny_sequence(0, 4, 2), tiny_parameters(4, 2)), std::invalid_argument);
  EXPECT_THROW(mamba_selective_scan(tiny_sequence(3, 0, 2), tiny_parameters(0, 2)), std::invalid_argument);
  EXPECT_THROW(mamba_selective_scan(tiny_sequence(3, 4, 0), tiny_parameters(4, 0)), std::invalid_argument);
  {
    MambaSequenceD x = tiny_sequence(3, 4, 2);
    x.dt_raw = MatrixD(2, 4);  // fewer tokens than u
    EXPECT_THROW(mamba_selective_scan(x, tiny_parameters(4, 2)), std::invalid_argument);
  }
  {
    MambaSequenceD x = tiny_sequence(3, 4, 2);
    x.z = MatrixD(3, 5);  // more channels than u
    EXPECT_THROW(mamba_selective_scan(x, tiny_parameters(4, 2)), std::invalid_argument);
  }
  {
    MambaSequenceD x = tiny_sequence(3, 4, 2);
    x.C = MatrixD(3, 3);  // N disagrees with A_log
    EXPECT_THROW(mamba_selective_scan(x, tiny_parameters(4, 2)), std::invalid_argument);
  }
  EXPECT_THROW(mamba_selective_scan(tiny_sequence(3, 4, 2), tiny_parameters(5, 2)), std::invalid_argument);
  {
    MambaParametersD p = tiny_parameters(4, 2);
    p.D.pop_back();
    EXPECT_THROW(mamba_selective_scan(tiny_sequence(3, 4, 2), p), std::invalid_argument);
  }
  {
    MambaParametersD p = tiny_parameters(4, 2);
    p.dt_bias.push_back(0.0);
    EXPECT_THROW(mamba_selective_scan(tiny_sequence(3, 4, 2), p), std::invalid_argument);
  }
  EXPECT_NO_THROW(mamba_selective_scan(tiny_sequence(1, 1, 1), tiny_parameters(1, 1)));
}

TEST(MambaReference, TwoTokensByHand) {
  // One channel, N = 1, A = -2 (A_log = log 2).
  MambaSequenceD x = tiny_sequence(2, 1, 1);
  MambaParametersD p = tiny_parameters(1, 1);
  p.A_log(0, 0) = std::log(2.0);
  p.dt_bias[0] = -1.0;
  p.D[0] = 0.5;
  x.u(0, 0) = 1.5, x.dt_raw(0, 0) = 0.25, x.z(0, 0) = 0.75, x.B(0, 0) = 2.0, x.C(0, 0) = -1.0;
  x.u(1, 0) = -0.5, x.dt_raw(1, 0) = -2.0, x.z(1, 0) = -1.25, x.B(1, 0) = 0.5, x.C(1, 0) = 3.0;
  const MambaReferenceResult r = mamba_selective_scan(x, p);
  auto softplus = [](double v) { return std::log(1 + std::exp(v)); };
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  const double dt0 = softplus(-0.75), dt1 = softplus(-3.0);
  const double h0 = dt0 * 2.0 * 1.5;
  const double h1 = std::exp(-2 * dt1) * h0 + dt1 * 0.5 * -0.5;
  EXPECT_NEAR(r.outputs(0, 0), (-1.0 * h0 + 0.5 * 1.5) * silu(0.75), 1e-14);
  EXPECT_NEAR(r.outputs(1, 0), (3.0 * h1 + 0.5 * -0.5) * silu(-1.25), 1e-14);
  EXPECT_NEAR(r.state(0, 0), h1, 1e-14);
}

// --- scan operator ----------------------------------------------------------------------------

TEST(MambaScan, CombineIsAssociativeWithIdentity) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> decay(0.0, 1.0), input(-2.0, 2.0);
  double worst = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    const ScanElement<double> x{decay(rng), input(rng)}, y{decay(rng), input(rng)}, w{decay(rng), input(rng)};
    const ScanElement<double> left = combine(combine(x, y), w), right = combine(x, combine(y, w));
    worst = std::fmax(worst, std::fabs(left.a - right.a) + std::fabs(left.b - right.b));
    const ScanElement<double> with_identity = combine(ScanElement<double>{}, x);
    EXPECT_EQ(with_identity.a, x.a);
    EXPECT_EQ(with_identity.b, x.b);
  }
  EXPECT_LT(worst, 1e-14);
}

TEST(MambaScan, AnyBracketingOfAFoldMatchesTheSequentialRecurrence) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> decay(0.5, 1.0), input(-1.0, 1.0);
  std::vector<ScanElement<double>> steps(257);
  for (auto& s : steps) s = {decay(rng), input(rng)};
  const double h_start = 0.75;
  double h = h_start;
  for (const auto& s : steps) h = s.a * h + s.b;
  // Left fold, and a two-level chunked fold (chunks of 16, then the chunk elements).
  ScanElement<double> left{};
  for (const auto& s : steps) left = combine(left, s);
  ScanElement<double> chunked{};
  for (std::size_t begin = 0; begin < steps.size(); begin += 16) {
    ScanElement<double> chunk{};
    for (std::size_t i = begin; i < std::min(steps.size(), begin + 16); ++i) chunk = combine(chunk, steps[i]);
    chunked = combine(chunked, chunk);
  }
  EXPECT_NEAR(left.a * h_start + left.b, h, 1e-12);
  EXPECT_NEAR(chunked.a * h_start + chunked.b, h, 1e-12);
}

// --- kernels ----------------------------------------------------------------------------------

TEST(MambaPrefill, ChunkedScanMatchesReferenceFp32) {
  const Problem<float> problem(mamba_cell(2, 2, 8, DType::float32), 300);
  for (std::int64_t chunk : {1, 64, 100, 128, 300, 1000}) {
    const Accuracy a = problem.against_reference(problem.chunked(chunk));
    EXPECT_TRUE(a.output_finite);
    EXPECT_LT(a.max_rel_error, 2e-6) << "chunk " << chunk;
    EXPECT_EQ(a.rows_checked, 2 * 300);
    RecordProperty("fp32_max_rel_error_chunk_" + std::to_string(chunk), std::to_string(a.max_rel_error));
    std::printf("fp32 chunk %4ld: max_rel_error %.3g (max_abs %.3g)\n", static_cast<long>(chunk), a.max_rel_error,
                a.max_abs_error);
  }
}

TEST(MambaPrefill, ChunkedScanMatchesReferenceBf16) {
  const Problem<bf16> problem(mamba_cell(1, 4, 16, DType::bfloat16), 1000);
  for (std::int64_t chunk : {64, 256, 1000}) {
    const Accuracy a = problem.against_reference(problem.chunked(chunk));
    EXPECT_TRUE(a.output_finite);
    EXPECT_LT(a.max_rel_error, dtype_tolerance(DType::bfloat16)) << "chunk " << chunk;
    std::printf("bf16 chunk %4ld: max_rel_error %.3g (max_abs %.3g)\n", static_cast<long>(chunk), a.max_rel_error,
                a.max_abs_error);
  }
}

TEST(MambaPrefill, ChunkedScanEqualsSequentialScan) {
  const Problem<float> problem(mamba_cell(1, 3, 4, DType::float32, 5), 517);
  std::vector<float> sequential_state;
  const std::vector<float> sequential = problem.sequential(&sequential_state);
  for (std::int64_t chunk : {1, 7, 64, 128, 256, 517}) {
    std::vector<float> state;
    const std::vector<float> out = problem.chunked(chunk, &state);
    const double out_diff = relative_difference(out, sequential);
    const double state_diff = relative_difference(state, sequential_state);
    EXPECT_LT(out_diff, 1e-6) << "chunk " << chunk;
    EXPECT_LT(state_diff, 1e-6) << "chunk " << chunk;
    std::printf("chunk %3ld vs sequential: outputs %.3g, final state %.3g\n", static_cast<long>(chunk), out_diff,
                state_diff);
  }
}

TEST(MambaPrefill, VectorStateKernelMatchesReferenceAndSequentialAtEveryLength) {
  // N a multiple of 8 takes the 8-lane state kernel: N = 16 with N fixed at compile time, 8 and 24
  // with N/8 vectors at run time. In AVX-512 builds a multiple of 16 takes the 16-lane one instead:
  // 16 fixed, 32 and 48 with N/16 vectors at run time. Lengths 1 (one partial block), 63/65 (around
  // one 64-token block, and around the 8-token groups of the horizontal sum) and 200, as one chunk
  // and split in time.
  for (std::int64_t n : {8, 16, 24, 32, 48}) {
    for (std::int64_t length : {1, 63, 65, 200}) {
      const Problem<float> problem(mamba_cell(2, 1, 8, DType::float32, n), length, 11);
      std::vector<float> sequential_state;
      const std::vector<float> sequential = problem.sequential(&sequential_state);
      EXPECT_LT(problem.against_reference(sequential).max_rel_error, 2e-6) << "N " << n << " length " << length;
      for (std::int64_t chunk : {length, std::int64_t{64}}) {
        std::vector<float> state;
        const std::vector<float> out = problem.chunked(chunk, &state);
        EXPECT_LT(problem.against_reference(out).max_rel_error, 2e-6) << "N " << n << " length " << length;
        EXPECT_LT(relative_difference(out, sequential), 1e-6) << "N " << n << " length " << length << " chunk " << chunk;
        EXPECT_LT(relative_difference(state, sequential_state), 1e-6) << "N " << n << " length " << length;
      }
    }
  }
}

TEST(MambaPrefill, ChunkedScanContinuesFromACarriedState) {
  // A prefill in two calls, the state carried between them, equals one call over the whole
  // sequence: the state is the whole context.
  const std::int64_t tokens = 400, split = 150;
  const Problem<float> whole(mamba_cell(2, 2, 4, DType::float32), tokens);
  const Problem<float> first = whole.slice(0, split), second = whole.slice(split, tokens - split);
  const std::vector<float> expected_first = first.sequential();
  std::vector<float> whole_state;
  const std::vector<float> reference = whole.sequential(&whole_state);
  std::vector<float> state = whole.zero_state(), workspace(1 << 16);
  std::vector<float> out_first(whole.shape.rows() * split), out_second(whole.shape.rows() * (tokens - split));
  mamba_prefill_chunked(whole.shape, whole.params(), split, 64, first.sequence(), state.data(), workspace.data(),
                        out_first.data());
  mamba_prefill_chunked(whole.shape, whole.params(), tokens - split, 64, second.sequence(), state.data(),
                        workspace.data(), out_second.data());
  EXPECT_LT(relative_difference(out_first, expected_first), 1e-6);
  // Row r of the second call is tokens [split, tokens) of row r of the whole.
  double worst = 0;
  for (std::int64_t r = 0; r < whole.shape.rows(); ++r) {
    for (std::int64_t t = split; t < tokens; ++t) {
      worst = std::fmax(worst, std::fabs(out_second[r * (tokens - split) + t - split] - reference[r * tokens + t]));
    }
  }
  EXPECT_LT(worst, 1e-5);
  EXPECT_LT(relative_difference(state, whole_state), 1e-6);
}

// The decode step takes channels in blocks of 64 that never cross a batch element: the shapes cover
// one short block, several with a partial last one in each of 2-3 batch elements, the scalar state
// path (N = 4) and the default shape, whose rows are split over the team.
void expect_decode_steps_equal_prefill_rows(const Cell& cell) {
  const std::int64_t tokens = 200;
  const Problem<float> problem(cell, tokens);
  const std::vector<float> prefill = problem.chunked(64);
  const MambaShape& shape = problem.shape;
  const std::int64_t n = shape.state_size, rows = shape.rows();
  // Decode token by token from a zero state; after each step compare with row t of the prefill.
  std::vector<float> state = problem.zero_state(), out(rows);
  std::vector<float> u(rows), dt_raw(rows), z(rows), B(shape.batch * n), C(shape.batch * n);
  double worst = 0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t r = 0; r < rows; ++r) {
      u[r] = problem.u[r * tokens + t];
      dt_raw[r] = problem.dt_raw[r * tokens + t];
      z[r] = problem.z[r * tokens + t];
    }
    for (std::int64_t b = 0; b < shape.batch; ++b) {
      std::copy_n(problem.B.begin() + (b * tokens + t) * n, n, B.begin() + b * n);
      std::copy_n(problem.C.begin() + (b * tokens + t) * n, n, C.begin() + b * n);
    }
    mamba_decode_step(shape, problem.params(), MambaTokens<float>{u.data(), dt_raw.data(), z.data(), B.data(), C.data()},
                      state.data(), out.data());
    for (std::int64_t r = 0; r < rows; ++r) {
      const double expected = prefill[r * tokens + t];
      worst = std::fmax(worst, std::fabs(out[r] - expected) / std::fmax(1.0, std::fabs(expected)));
    }
  }
  EXPECT_LT(worst, 1e-6) << "batch " << shape.batch << ", channels " << shape.channels << ", N " << n;
  std::printf("decode step vs prefill row (batch %ld, channels %ld, N %ld), worst over %ld tokens: %.3g\n",
              static_cast<long>(shape.batch), static_cast<long>(shape.channels), static_cast<long>(n),
              static_cast<long>(tokens), worst);
}

TEST(MambaDecode, StepAtPositionTEqualsRowTOfThePrefill) {
  expect_decode_steps_equal_prefill_rows(mamba_cell(2, 2, 4, DType::float32));
  expect_decode_steps_equal_prefill_rows(mamba_cell(2, 5, 27, DType::float32));
  expect_decode_steps_equal_prefill_rows(mamba_cell(3, 5, 27, DType::float32, 4));
  expect_decode_steps_equal_prefill_rows(mamba_cell(1, 8, 64, DType::float32));
}

TEST(MambaPrefill, OutputsUpToTNeverDependOnLaterInputs) {
  const std::int64_t tokens = 300, cut = 170;
  Problem<float> problem(mamba_cell(1, 2, 4, DType::float32), tokens);
  const std::vector<float> before_chunked = problem.chunked(64), before_sequential = problem.sequential();
  std::mt19937_64 rng(11);
  std::normal_distribution<float> noise(0.0f, 3.0f);
  const std::int64_t rows = problem.shape.rows(), n = problem.shape.state_size;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t t = cut; t < tokens; ++t) {
      problem.inputs.u[r * tokens + t] = noise(rng);
      problem.inputs.dt_raw[r * tokens + t] = noise(rng);
      problem.inputs.z[r * tokens + t] = noise(rng);
    }
  }
  for (std::int64_t i = cut * n; i < tokens * n; ++i) {
    problem.inputs.B[i] = noise(rng);
    problem.inputs.C[i] = noise(rng);
  }
  problem.restore();
  const std::vector<float> after_chunked = problem.chunked(64), after_sequential = problem.sequential();
  bool later_changed = false;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t t = 0; t < cut; ++t) {
      ASSERT_EQ(after_chunked[r * tokens + t], before_chunked[r * tokens + t]) << "row " << r << " t " << t;
      ASSERT_EQ(after_sequential[r * tokens + t], before_sequential[r * tokens + t]) << "row " << r << " t " << t;
    }
    for (std::int64_t t = cut; t < tokens; ++t) later_changed |= after_chunked[r * tokens + t] != before_chunked[r * tokens + t];
  }
  EXPECT_TRUE(later_changed);  // the edit was real
}

TEST(MambaDecode, StateDecaysMonotonicallyWithoutInput) {
  const std::int64_t tokens = 64;
  Problem<float> problem(mamba_cell(1, 2, 4, DType::float32), tokens);
  std::vector<float> state;
  problem.chunked(tokens, &state);  // some non-zero state
  const MambaShape& shape = problem.shape;
  const std::int64_t rows = shape.rows(), n = shape.state_size;
  std::vector<float> u(rows, 0.0f), dt_raw(rows), z(rows, 1.0f), B(n, 1.0f), C(n, 1.0f), out(rows);
  std::mt19937_64 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  double start_norm = 0;
  for (float h : state) start_norm += double(h) * h;
  ASSERT_GT(start_norm, 0);
  std::vector<float> previous = state;
  for (int step = 0; step < 500; ++step) {
    for (float& d : dt_raw) d = normal(rng);  // dt still varies with the (absent) input
    mamba_decode_step(shape, problem.params(), MambaTokens<float>{u.data(), dt_raw.data(), z.data(), B.data(), C.data()},
                      state.data(), out.data());
    for (std::size_t i = 0; i < state.size(); ++i) {
      ASSERT_LE(std::fabs(state[i]), std::fabs(previous[i])) << "step " << step << " entry " << i;
      if (state[i] != 0.0f) {
        ASSERT_EQ(std::signbit(state[i]), std::signbit(previous[i])) << "step " << step;  // no overshoot
      }
    }
    previous = state;
  }
  double end_norm = 0;
  for (float h : state) end_norm += double(h) * h;
  EXPECT_LT(end_norm, start_norm);
}

TEST(MambaPrefill, PlanSplitsTimeOnlyWhenRowsAreFew) {
  // 512 channels on 2 threads: one chunk per row, no workspace.
  const MambaShape wide{1, 512, 16};
  EXPECT_EQ(mamba_prefill_chunk(wide, 8192, 2), 8192);
  EXPECT_EQ(mamba_prefill_workspace_floats(wide, 8192, 8192), 0);
  // 2 channels on 2 threads: each row cut into 4 chunks so that rows x chunks >= 4 x threads.
  const MambaShape narrow{1, 2, 16};
  EXPECT_EQ(mamba_prefill_chunk(narrow, 8192, 2), 2048);
  EXPECT_EQ(mamba_prefill_workspace_floats(narrow, 8192, 2048), 2 * 4 * 2 * 16);
  // Never below kMambaMinChunk, and a short sequence stays whole.
  EXPECT_EQ(mamba_prefill_chunk(MambaShape{1, 1, 16}, 300, 16), kMambaMinChunk);
  EXPECT_EQ(mamba_prefill_chunk(narrow, 40, 2), 40);
  EXPECT_THROW(Problem<float>(mamba_cell(1, 1, 2, DType::float32), 10).chunked(0), std::invalid_argument);
}

// --- mechanism --------------------------------------------------------------------------------

TEST(MambaMechanism, StateShapeIsFixedAcrossLengths) {
  const Mechanism* mamba = find_mechanism("mamba");
  ASSERT_NE(mamba, nullptr);
  EXPECT_EQ(mamba->info().state_kind, StateKind::fixed_state);
  for (Phase phase : {Phase::decode, Phase::prefill}) {
    for (DType dtype : {DType::float32, DType::bfloat16}) {
      for (std::int64_t length : {512, 2048, 8192}) {
        const Cell cell = mamba_cell(2, 8, 64, dtype, 16, phase, length);
        EXPECT_EQ(mamba->state_bytes(cell), 2 * 512 * 16 * 4);  // batch x d_inner x N x fp32
      }
    }
  }
  EXPECT_EQ(mamba->state_bytes(mamba_cell(1, 8, 64, DType::bfloat16, 64)), 512 * 64 * 4);
}

TEST(MambaMechanism, UnsupportedOutsideStateSizeRange) {
  const Mechanism* mamba = find_mechanism("mamba");
  ASSERT_NE(mamba, nullptr);
  EXPECT_TRUE(mamba->unsupported(mamba_cell(1, 8, 64, DType::bfloat16, 0)).has_value());
  EXPECT_TRUE(mamba->unsupported(mamba_cell(1, 8, 64, DType::bfloat16, 257)).has_value());
  EXPECT_FALSE(mamba->unsupported(mamba_cell(1, 8, 64, DType::bfloat16, 1)).has_value());
  EXPECT_FALSE(mamba->unsupported(mamba_cell(1, 8, 64, DType::bfloat16, 256)).has_value());
}

TEST(MambaMechanism, PreparedCellsCheckWithinToleranceAndDecodeAllocatesNothing) {
  const Mechanism* mamba = find_mechanism("mamba");
  ASSERT_NE(mamba, nullptr);
  CpuBackend backend;
  for (Phase phase : {Phase::decode, Phase::prefill}) {
    for (DType dtype : {DType::float32, DType::bfloat16}) {
      for (std::int64_t n : {1, 16, 33}) {
        const Cell cell = mamba_cell(2, 2, 16, dtype, n, phase, 300);
        const testing::PreparedRun run = testing::run_prepared(*mamba, cell, 42, backend);
        EXPECT_LE(run.prepared_bytes, mamba->predicted_peak_bytes(cell));
        EXPECT_EQ(run.run_allocations, 0);
        const Accuracy& a = run.accuracy;
        EXPECT_TRUE(a.output_finite);
        EXPECT_LT(a.max_rel_error, dtype_tolerance(dtype)) << phase_name(phase) << " " << dtype_name(dtype) << " N=" << n;
        EXPECT_EQ(a.rows_checked, phase == Phase::decode ? 2 : 2 * 300);
        std::printf("%s %s N=%ld: max_rel_error %.3g\n", phase_name(phase).c_str(), dtype_name(dtype).c_str(),
                    static_cast<long>(n), a.max_rel_error);
        const Cost cost = mamba->cost(cell);
        EXPECT_GT(cost.flops, 0);
        EXPECT_GT(cost.bytes_moved, phase == Phase::decode ? 2.0 * mamba->state_bytes(cell) : 0.0);
      }
    }
  }
}

TEST(MambaMechanism, NarrowCellsTakeTheTimeSplitPathAndStillCheck) {
  // 2 channels on this machine's threads: the timed prefill (and the decode context) go through
  // all three phases of the chunked scan.
  const Mechanism* mamba = find_mechanism("mamba");
  ASSERT_NE(mamba, nullptr);
  CpuBackend backend;
  for (Phase phase : {Phase::decode, Phase::prefill}) {
    const Cell cell = mamba_cell(1, 1, 2, DType::float32, 16, phase, 700);
    const Accuracy a = testing::run_prepared(*mamba, cell, 5, backend).accuracy;
    EXPECT_TRUE(a.output_finite);
    EXPECT_LT(a.max_rel_error, 2e-6) << phase_name(phase);
  }
  EXPECT_GT(mamba->predicted_peak_bytes(mamba_cell(1, 1, 2, DType::float32, 16, Phase::prefill, 700)),
            mamba->predicted_peak_bytes(mamba_cell(1, 1, 2, DType::float32, 16, Phase::decode, 700)));
}

}  // namespace
}  // namespace arch_bench
