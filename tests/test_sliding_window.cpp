// sliding_window: the banded prefill and the ring decode against the fp64 reference and each other,
// W >= L as softmax_kv to the bit, W = 1, grouped K/V heads, bounded state bytes and the refusals.
#include <filesystem>

#include <gtest/gtest.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/sliding_window/capacity.hpp"
#include "mechanisms/sliding_window/reference.hpp"
#include "mechanisms/sliding_window/ring.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "support/attention_fixtures.hpp"
#include "support/cli.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/cli_refusals.hpp"

namespace arch_bench::testing {
namespace {

Cell window_cell(std::int64_t window, Phase phase, std::int64_t length, DType dtype = DType::bfloat16,
                 std::int64_t kv_heads = 0) {
  Cell cell = small_cell(8, 64, length, dtype, phase);
  cell.mechanism = "sliding_window";
  cell.options.set("window", window);
  if (kv_heads > 0) cell.options.set("kv_heads", kv_heads);
  return cell;
}

// Windows inside one key block, straddling blocks, equal to a block and past the sequence; lengths off
// the 64-token block; every kernel set (the band masks are each set's own code).
TEST(SlidingWindow, PrefillMatchesFp64ReferenceAtEveryWindowAndKernelSet) {
  for (CpuIsa isa : runnable_isas()) {
    for (std::int64_t window : {1, 5, 64, 100, 1000}) {
      for (std::int64_t dim : {33, 64}) {
        for (std::int64_t tokens : {1, 70, 200}) {
          const AttentionInputs f32 = make_attention_inputs(small_cell(2, dim, 0, DType::float32), tokens, 41);
          EXPECT_LT(relative_max_error(attention_prefill<float>(f32, 1, window, isa), attention_reference(f32, 1, window)), 1e-5)
              << cpu_isa_name(isa) << " W " << window << " dim " << dim << " tokens " << tokens;
          const AttentionInputs b16 = make_attention_inputs(small_cell(2, dim, 0, DType::bfloat16), tokens, 42);
          EXPECT_LT(relative_max_error(attention_prefill<bf16>(b16, 1, window, isa), attention_reference(b16, 1, window)),
                    dtype_tolerance(DType::bfloat16))
              << cpu_isa_name(isa) << " bf16 W " << window << " dim " << dim << " tokens " << tokens;
        }
      }
    }
  }
}

// W = 1: every query sees only itself, so each output row is its own value row exactly.
TEST(SlidingWindow, WindowOfOneReturnsEachTokensValue) {
  for (CpuIsa isa : runnable_isas()) {
    const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 0, DType::float32), 150, 43);
    const std::vector<float> out = attention_prefill<float>(in, 1, 1, isa);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_FLOAT_EQ(out[i], in.v[i]) << cpu_isa_name(isa) << " " << i;
  }
}

// W >= L: the band holds every causal key, and the kernels do softmax_kv's arithmetic.
TEST(SlidingWindow, WindowPastTheSequenceIsSoftmaxKvBitForBit) {
  for (CpuIsa isa : runnable_isas()) {
    const AttentionInputs in = make_attention_inputs(small_cell(8, 64, 0, DType::bfloat16), 300, 44);
    const auto q = testing::to_storage<bf16>(in.q), k = testing::to_storage<bf16>(in.k),
               v = testing::to_storage<bf16>(in.v);
    std::vector<bf16> causal(q.size());
    softmax_prefill(in.batch_heads, in.tokens, in.dim, q.data(), k.data(), v.data(), causal.data(), isa);
    EXPECT_EQ(attention_prefill<bf16>(in, 1, 300, isa), testing::to_floats(causal)) << cpu_isa_name(isa);
    EXPECT_EQ(attention_prefill<bf16>(in, 1, 5000, isa), testing::to_floats(causal)) << cpu_isa_name(isa);
  }
  // The prepared decode cells: same inputs, same output bits.
  const Mechanism* window = find_mechanism("sliding_window");
  const Mechanism* softmax = find_mechanism("softmax_kv");
  ASSERT_NE(window, nullptr);
  CpuBackend backend;
  Cell softmax_cell = window_cell(301, Phase::decode, 300);
  softmax_cell.mechanism = "softmax_kv";
  softmax_cell.options.erase("window");
  auto a = window->prepare(window_cell(301, Phase::decode, 300), 7, backend);
  auto b = softmax->prepare(softmax_cell, 7, backend);
  a->run();
  b->run();
  EXPECT_EQ(a->check().max_abs_error, b->check().max_abs_error);
}

// The ring decode (token L into slot L % W, all W slots read as they lie) against the reference row,
// at contexts inside, at and far past the window, with grouped K/V heads.
TEST(SlidingWindow, PreparedCellsMatchTheReferenceAcrossTheWindowEdge) {
  const Mechanism* window = find_mechanism("sliding_window");
  CpuBackend backend;
  for (DType dtype : {DType::float32, DType::bfloat16}) {
    for (std::int64_t kv_heads : {0, 2, 1}) {
      for (std::int64_t length : {0, 50, 99, 100, 101, 777}) {
        for (Phase phase : {Phase::decode, Phase::prefill}) {
          if (phase == Phase::prefill && length == 0) continue;
          auto prepared = window->prepare(window_cell(100, phase, length, dtype, kv_heads), 13, backend);
          prepared->run();
          const Accuracy first = prepared->check();
          EXPECT_TRUE(first.output_finite);
          EXPECT_LT(first.max_rel_error, dtype == DType::float32 ? 1e-5 : dtype_tolerance(dtype))
              << dtype_name(dtype) << " " << phase_name(phase) << " kv " << kv_heads << " L " << length;
          prepared->run();  // a repeated sample rewrites the same slot and leaves the same output
          EXPECT_EQ(prepared->check().max_abs_error, first.max_abs_error);
        }
      }
    }
  }
}

// A decode step at position L equals row L of the banded prefill over L + 1 tokens.
TEST(SlidingWindow, DecodeAtLEqualsLastRowOfBandedPrefill) {
  const std::int64_t length = 700, window = 130;
  const AttentionInputs in = make_attention_inputs(small_cell(4, 64, length, DType::float32), length + 1, 45);
  const std::int64_t slots = ring_slots(length, window), dim = in.dim;
  SoftmaxDecodePlan plan = plan_softmax_decode(in.batch_heads, dim, slots, slots, 2);
  std::vector<float> k_ring(in.batch_heads * slots * dim), v_ring(k_ring.size()), q(in.batch_heads * dim),
      k_new(q.size()), v_new(q.size()), out(q.size()), workspace(plan.workspace_floats());
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    for (std::int64_t p = length - slots; p < length; ++p) {
      std::copy(in.k_at(h, p), in.k_at(h, p) + dim, k_ring.begin() + (h * slots + p % slots) * dim);
      std::copy(in.v_at(h, p), in.v_at(h, p) + dim, v_ring.begin() + (h * slots + p % slots) * dim);
    }
    std::copy(in.q_at(h, length), in.q_at(h, length) + dim, q.begin() + h * dim);
    std::copy(in.k_at(h, length), in.k_at(h, length) + dim, k_new.begin() + h * dim);
    std::copy(in.v_at(h, length), in.v_at(h, length) + dim, v_new.begin() + h * dim);
  }
  softmax_decode_append(plan, k_new.data(), v_new.data(), k_ring.data(), v_ring.data(), length % slots);
  softmax_decode_attend(plan, q.data(), k_ring.data(), v_ring.data(), slots, workspace.data(), out.data());
  EXPECT_LT(relative_max_error(out, row_of_every_head(attention_prefill<float>(in, 1, window), in, length)), 1e-5);
}

TEST(SlidingWindow, StateIsBoundedByTheWindow) {
  const Mechanism* window = find_mechanism("sliding_window");
  const Mechanism* softmax = find_mechanism("softmax_kv");
  ASSERT_NE(window, nullptr);
  EXPECT_EQ(window->info().state_kind, StateKind::fixed_state);
  // Below the window it is softmax_kv's cache; past it, W tokens whatever L.
  Cell short_softmax = window_cell(1024, Phase::decode, 512);
  short_softmax.mechanism = "softmax_kv";
  EXPECT_EQ(window->state_bytes(window_cell(1024, Phase::decode, 512)), softmax->state_bytes(short_softmax));
  EXPECT_EQ(window->state_bytes(window_cell(1024, Phase::decode, 8192)), 2 << 20);  // 2 x 1024 x 8 x 64 x 2 B
  EXPECT_EQ(window->state_bytes(window_cell(1024, Phase::decode, 1 << 20)), 2 << 20);
  EXPECT_EQ(window->state_bytes(window_cell(1024, Phase::decode, 8192, DType::bfloat16, 2)), 512 << 10);
  // Decode reads min(L + 1, W) rows; prefill does the band's work only.
  const Cost decode = window->cost(window_cell(1024, Phase::decode, 8192));
  EXPECT_EQ(decode.bytes_moved, 64.0 * 2 * (8 * (2 * 1024 + 2) + 2 * 8));
  EXPECT_EQ(decode.flops, 8.0 * 1024 * 4 * 64);
  const Cost prefill = window->cost(window_cell(1024, Phase::prefill, 8192));
  EXPECT_EQ(prefill.flops, 8.0 * 4 * 64 * (1024.0 * 1025 / 2 + 7168.0 * 1024));
  EXPECT_LT(window->predicted_peak_bytes(window_cell(1024, Phase::decode, 1 << 20)), 3 << 20);
}

// The probe holds the last W pairs: those are recalled, older ones are not.
TEST(SlidingWindow, CapacityProbeRecallsOnlyTheWindow) {
  const std::int64_t n = 64, d = 32;
  MatrixD keys(n, d), values(n, 4);
  for (std::int64_t i = 0; i < n; ++i) {
    keys(i, i % d) = 1.0;  // orthogonal within each half; the halves repeat the directions
    for (std::int64_t c = 0; c < 4; ++c) values(i, c) = static_cast<double>(i * 4 + c);
  }
  const MatrixD recalled = sliding_window_capacity(16).recall(keys, values);
  for (std::int64_t i = n - 16; i < n; ++i) EXPECT_NEAR(recalled(i, 0), values(i, 0), 1e-6) << i;
  EXPECT_GT(std::abs(recalled(0, 0) - values(0, 0)), 1.0);  // pair 0 left the window
}

TEST(SlidingWindow, BadWindowAndKvHeadsAreRefused) {
  const Mechanism* window = find_mechanism("sliding_window");
  EXPECT_TRUE(window->unsupported(window_cell(0, Phase::decode, 16)).has_value());
  EXPECT_TRUE(window->unsupported(window_cell(16, Phase::decode, 16, DType::bfloat16, 3)).has_value());
  for (const char* flags : {"--window 0", "--window -4", "--kv-heads 3"}) {
    testing::expect_run_refused(std::string("--mode landscape --candidates sliding_window ") + flags +
                                    " --sequence-lengths 16 --quiet",
                                "");
  }
}

// A quick decode landscape with sliding_window (window W) as its one candidate; its report.
nlohmann::json landscape_with_window(const TempFolder& folder, int window, const std::string& lengths) {
  const auto result = run_cli("run --mode landscape --candidates sliding_window --window " + std::to_string(window) +
                              " --sequence-lengths " + lengths +
                              " --phase decode --warmup 0 --repeats 2 --threads 1 --quiet --results-dir '" +
                              folder.path().string() + "' --run-label t");
  EXPECT_EQ(result.exit_code, 0) << result.err;  // the caller stops on it (HasFailure)
  if (result.exit_code != 0) return {};
  return read_json(folder / "landscape_t.json");
}

// The landscape takes it as a candidate with the given window; its state is fixed once L >= W.
TEST(SlidingWindow, LandscapeCandidateRecordsItsWindow) {
  TempFolder folder;
  const auto report = landscape_with_window(folder, 16, "32,64");
  ASSERT_FALSE(::testing::Test::HasFailure());
  EXPECT_EQ(report["decision"]["details"]["candidates"]["sliding_window"]["verdict"], "accept_fixed_state");
  for (const auto& row : report["metrics"]["rows"]) {
    if (row["mechanism"] != "sliding_window") continue;
    EXPECT_EQ(row["options"]["window"], 16);
    EXPECT_TRUE(row["within_tolerance"].get<bool>());
  }
}

// A window longer than the shortest measured length: the state grows (16 -> 32 tokens) and has
// reached its bound by the longest (64 >= W = 32), so the landscape accepts it as bounded, saying
// so, while a KV cache's doubling state stays rejected (test_decision.cpp).
TEST(SlidingWindow, LandscapeAcceptsAStateThatReachedItsBound) {
  TempFolder folder;
  const auto report = landscape_with_window(folder, 32, "16,64");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const auto& verdict = report["decision"]["details"]["candidates"]["sliding_window"];
  EXPECT_EQ(verdict["verdict"], "accept_fixed_state") << verdict.dump();
  EXPECT_NE(verdict["reasons"].dump().find("up to a bound"), std::string::npos) << verdict.dump();
  std::vector<std::int64_t> state_bytes;
  for (const auto& row : report["metrics"]["rows"]) {
    if (row["mechanism"] == "sliding_window") state_bytes.push_back(row["state_bytes"].get<std::int64_t>());
  }
  ASSERT_EQ(state_bytes.size(), 2u);
  EXPECT_LT(state_bytes[0], state_bytes[1]) << "the state grew below the window";
}

}  // namespace
}  // namespace arch_bench::testing

namespace arch_bench::testing {
namespace {

// One fp64 softmax for both mechanisms: sliding_window's reference is softmax_kv's with the window,
// a window covering the row is the causal row exactly, and a negative window is refused.
TEST(SlidingWindow, ReferenceIsSoftmaxKvsWithTheWindow) {
  const AttentionInputs in = make_attention_inputs(testing::small_cell(1, 16, 40, DType::float32), 40, 3);
  const MatrixD q = in.head_matrix(in.q, 0, in.tokens), k = in.head_matrix(in.k, 0, in.tokens),
                v = in.head_matrix(in.v, 0, in.tokens);
  for (std::int64_t window : {1, 7, 39, 40, 100}) {
    EXPECT_EQ(sliding_window_attention_reference(q, k, v, window).data,
              softmax_attention_reference(q, k, v, window).data);
  }
  EXPECT_EQ(softmax_attention_reference(q, k, v, 40).data, softmax_attention_reference(q, k, v).data);
  EXPECT_EQ(softmax_attention_row(q, k, v, 20, 21), softmax_attention_row(q, k, v, 20));
  EXPECT_NE(softmax_attention_row(q, k, v, 20, 20), softmax_attention_row(q, k, v, 20));  // key 0 leaves
  EXPECT_THROW(softmax_attention_row(q, k, v, 5, -1), std::invalid_argument);
  EXPECT_THROW(sliding_window_attention_row(q, k, v, 5, 0), std::invalid_argument);
}

}  // namespace
}  // namespace arch_bench::testing
