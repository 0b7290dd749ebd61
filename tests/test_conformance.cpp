// `arch-bench conformance`: for every mechanism with an adapter, generated inputs run through the
// kernels agree with the fp64 reference and decode agrees with prefill at the dtype tolerance; bad
// input files are exit 2 with a message naming the files and nothing written; the CLI end to end.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/bf16.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/option_catalog.hpp"
#include "mechanisms/registry.hpp"
#include "runner/conformance/conformance.hpp"
#include "support/cli.hpp"
#include "support/usage_error.hpp"
#include "runner/conformance/npy_files.hpp"
#include "tests/support/build_paths.hpp"

namespace arch_bench::testing {
namespace {
namespace fs = std::filesystem;

// Small but past one prefill chunk (64 tokens), with more than one batch element and head.
ConformanceShape small_shape() { return {2, 2, 80, 16}; }

MechanismOptions small_options() {
  MechanismOptions options;
  options.set("features", std::int64_t{32});
  options.set("state_size", std::int64_t{8});
  return options;
}

void generate(const fs::path& folder, const std::string& mechanism, DType dtype = DType::float32,
              MechanismOptions options = small_options()) {
  generate_conformance_inputs({folder, mechanism, small_shape(), options, 7, dtype});
}

bool empty_or_missing(const fs::path& folder) { return !fs::exists(folder) || fs::is_empty(folder); }

struct MechanismDtype {
  std::string mechanism;
  DType dtype;
};
void PrintTo(const MechanismDtype& p, std::ostream* out) { *out << p.mechanism << "_" << dtype_name(p.dtype); }

std::vector<MechanismDtype> every_adapter_and_dtype() {
  std::vector<MechanismDtype> params;
  for (const std::string& id : conformance_mechanisms()) {
    for (DType dtype : {DType::float32, DType::bfloat16}) params.push_back({id, dtype});
  }
  return params;
}

class ConformanceRoundTrip : public ::testing::TestWithParam<MechanismDtype> {};

TEST_P(ConformanceRoundTrip, PrefillMatchesReferenceAndDecodeMatchesPrefill) {
  const auto [mechanism, dtype] = GetParam();
  TempFolder folder;
  const fs::path inputs = folder / "in", outputs = folder / "out";
  generate(inputs, mechanism, dtype);
  const ConformanceResult result =
      run_conformance({mechanism, inputs, outputs, dtype, small_options(), /*overwrite=*/false});
  const nlohmann::json& m = result.manifest;
  const double tolerance = dtype_tolerance(dtype);
  EXPECT_TRUE(result.passed) << m.dump(2);
  EXPECT_LE(m["prefill_out"]["vs_reference"]["max_rel_error"].get<double>(), tolerance);
  EXPECT_LE(m["decode_out"]["vs_reference"]["max_rel_error"].get<double>(), tolerance);
  EXPECT_LE(m["decode_out"]["vs_prefill"]["max_rel_error"].get<double>(), tolerance);
  EXPECT_TRUE(m["decode_matches_prefill"].get<bool>());
  for (const auto& [name, state] : m["states"].items()) {
    if (state.contains("vs_reference")) {
      EXPECT_TRUE(state["vs_reference"]["within_tolerance"].get<bool>()) << name;
    }
  }
  ::testing::Test::RecordProperty("prefill_max_rel_error",
                                  std::to_string(m["prefill_out"]["vs_reference"]["max_rel_error"].get<double>()));

  // The files: outputs '<f4' holding storage-dtype values, the reference '<f8', the manifest.
  const NpyArray prefill = read_npy(outputs / "prefill_out.npy");
  const NpyArray decode = read_npy(outputs / "decode_out.npy");
  const NpyArray reference = read_npy(outputs / "reference_out.npy");
  EXPECT_EQ(prefill.dtype, NpyDtype::float32);
  EXPECT_EQ(decode.dtype, NpyDtype::float32);
  EXPECT_EQ(reference.dtype, NpyDtype::float64);
  EXPECT_EQ(prefill.shape, reference.shape);
  EXPECT_EQ(decode.shape, reference.shape);
  if (dtype == DType::bfloat16) {
    for (double x : prefill.values) ASSERT_EQ(x, round_through<bf16>(static_cast<float>(x)));
    for (double x : decode.values) ASSERT_EQ(x, round_through<bf16>(static_cast<float>(x)));
  }
  const nlohmann::json manifest = read_json(outputs / kConformanceManifest);
  EXPECT_EQ(manifest["mechanism"], mechanism);
  EXPECT_EQ(manifest["dtype"], dtype_name(dtype));
  EXPECT_EQ(manifest["axes"]["length"], 80);
  for (const fs::path& path : result.written) EXPECT_TRUE(fs::exists(path)) << path;
  for (const auto& [name, state] : manifest["states"].items()) {
    EXPECT_TRUE(fs::exists(outputs / state["file"].get<std::string>())) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(ConformanceMechanisms, ConformanceRoundTrip, ::testing::ValuesIn(every_adapter_and_dtype()),
                         [](const ::testing::TestParamInfo<MechanismDtype>& info) {
                           return info.param.mechanism + "_" + dtype_name(info.param.dtype);
                         });

TEST(ConformanceInputs, AnInputFileOfAnotherLengthIsRejectedNamingBothFiles) {
  TempFolder folder;
  generate(folder / "in", "softmax_kv");
  NpyArray k = read_npy(folder / "in" / "k.npy");
  k.shape[2] = 40;
  k.values.resize(static_cast<std::size_t>(k.size()));
  write_npy(folder / "in" / "k.npy", k, /*overwrite=*/true);
  const std::string message = testing::usage_error_message([&] {
    run_conformance({"softmax_kv", folder / "in", folder / "out", DType::float32, small_options(), false});
  });
  EXPECT_NE(message.find("q.npy and k.npy disagree on length"), std::string::npos) << message;
  EXPECT_NE(message.find("80"), std::string::npos) << message;
  EXPECT_NE(message.find("40"), std::string::npos) << message;
  EXPECT_TRUE(empty_or_missing(folder / "out"));
}

TEST(ConformanceInputs, WrongNumberOfDimensionsIsRejected) {
  TempFolder folder;
  generate(folder / "in", "linear_attention");
  write_npy(folder / "in" / "v.npy", NpyArray{{2, 80}, std::vector<double>(160, 0.5), NpyDtype::float32}, true);
  const std::string message = testing::usage_error_message([&] {
    run_conformance({"linear_attention", folder / "in", folder / "out", DType::float32, small_options(), false});
  });
  EXPECT_NE(message.find("v.npy: shape (2, 80) has 2 dimension(s)"), std::string::npos) << message;
  EXPECT_NE(message.find("[batch, heads, length, dv]"), std::string::npos) << message;
}

TEST(ConformanceInputs, NonFiniteValuesAreRejected) {
  TempFolder folder;
  generate(folder / "in", "softmax_kv");
  NpyArray q = read_npy(folder / "in" / "q.npy");
  q.values[17] = NAN;
  write_npy(folder / "in" / "q.npy", q, true);
  const std::string message = testing::usage_error_message([&] {
    run_conformance({"softmax_kv", folder / "in", folder / "out", DType::float32, small_options(), false});
  });
  EXPECT_NE(message.find("q.npy: element (0, 0, 1, 1) is nan"), std::string::npos) << message;
}

TEST(ConformanceInputs, MissingFilesAreAllNamed) {
  TempFolder folder;
  generate(folder / "in", "softmax_kv");
  fs::remove(folder / "in" / "k.npy");
  fs::remove(folder / "in" / "v.npy");
  const std::string message = testing::usage_error_message([&] {
    run_conformance({"softmax_kv", folder / "in", folder / "out", DType::float32, small_options(), false});
  });
  EXPECT_NE(message.find("missing input file(s) for softmax_kv: k.npy [batch, kv_heads, length, dim], v.npy"),
            std::string::npos)
      << message;
  EXPECT_TRUE(empty_or_missing(folder / "out"));
}

TEST(ConformanceInputs, ValuesAreRoundedToTheStorageDtype) {
  // Inputs that are not bf16-representable: a bf16 run must give exactly what it gives on the same
  // values rounded to bf16 first.
  TempFolder folder;
  generate(folder / "raw", "linear_attention");
  fs::create_directories(folder / "rounded");
  for (const char* name : {"q", "k", "v"}) {
    NpyArray array = read_npy(folder / "raw" / (std::string(name) + ".npy"));
    for (double& x : array.values) x = round_through<bf16>(static_cast<float>(x));
    write_npy(folder / "rounded" / (std::string(name) + ".npy"), array, false);
  }
  const auto raw = run_conformance({"linear_attention", folder / "raw", folder / "a", DType::bfloat16, {}, false});
  const auto rounded =
      run_conformance({"linear_attention", folder / "rounded", folder / "b", DType::bfloat16, {}, false});
  EXPECT_EQ(read_npy(folder / "a" / "prefill_out.npy").values, read_npy(folder / "b" / "prefill_out.npy").values);
  EXPECT_EQ(read_npy(folder / "a" / "reference_out.npy").values, read_npy(folder / "b" / "reference_out.npy").values);
  EXPECT_TRUE(raw.passed);
  EXPECT_TRUE(rounded.passed);
}

TEST(ConformanceInputs, LinearAttentionTakesAValueWidthOtherThanTheKeyWidth) {
  TempFolder folder;
  generate(folder / "in", "linear_attention");
  NpyArray v{{2, 2, 80, 24}, {}, NpyDtype::float64};
  for (std::int64_t i = 0; i < v.size(); ++i) v.values.push_back(std::sin(0.37 * static_cast<double>(i)));
  write_npy(folder / "in" / "v.npy", v, true);
  const auto result = run_conformance({"linear_attention", folder / "in", folder / "out", DType::float32, {}, false});
  EXPECT_TRUE(result.passed) << result.manifest.dump(2);
  EXPECT_EQ(read_npy(folder / "out" / "prefill_out.npy").shape, (std::vector<std::int64_t>{2, 2, 80, 24}));
  EXPECT_EQ(read_npy(folder / "out" / "final_state.npy").shape, (std::vector<std::int64_t>{2, 2, 16, 24}));
}

TEST(ConformanceInputs, GenerateWithoutAMechanismServesEveryMechanism) {
  TempFolder folder;
  generate(folder / "in", "");
  for (const std::string& id : conformance_mechanisms()) {
    const auto result = run_conformance({id, folder / "in", folder / ("out_" + id), DType::float32, small_options(), false});
    EXPECT_TRUE(result.passed) << id << ": " << result.manifest.dump(2);
  }
}

TEST(ConformanceInputs, GeneratedAttentionInputsAreTheTokensOfARunWithTheSameSeed) {
  TempFolder folder;
  generate(folder / "in", "softmax_kv");
  Cell cell;
  cell.phase = Phase::prefill;
  cell.sequence_length = 80;
  cell.batch = 2;
  cell.heads = 2;
  cell.head_dim = 16;
  cell.dtype = DType::float32;
  const AttentionInputs drawn = make_attention_inputs(cell, 80, 7);
  const NpyArray k = read_npy(folder / "in" / "k.npy");
  ASSERT_EQ(k.values.size(), drawn.k.size());
  for (std::size_t i = 0; i < drawn.k.size(); ++i) ASSERT_EQ(k.values[i], drawn.k[i]);
}

TEST(ConformanceOutputs, ExistingOutputsAreNeverOverwrittenUnlessAsked) {
  TempFolder folder;
  generate(folder / "in", "softmax_kv");
  const ConformanceRequest request{"softmax_kv", folder / "in", folder / "out", DType::float32, small_options(), false};
  run_conformance(request);
  const auto before = fs::last_write_time(folder / "out" / "prefill_out.npy");
  const std::string message = testing::usage_error_message([&] { run_conformance(request); });
  EXPECT_NE(message.find("already holds prefill_out.npy"), std::string::npos) << message;
  EXPECT_EQ(fs::last_write_time(folder / "out" / "prefill_out.npy"), before);
  ConformanceRequest again = request;
  again.overwrite = true;
  EXPECT_TRUE(run_conformance(again).passed);
}

TEST(ConformanceOutputs, GenerateNeverReplacesInputs) {
  TempFolder folder;
  generate(folder / "in", "softmax_kv");
  const std::string message = testing::usage_error_message([&] { generate(folder / "in", "linear_attention"); });
  EXPECT_NE(message.find("--generate never replaces input files"), std::string::npos) << message;
}

TEST(ConformanceOptions, UnknownMechanismAndFeatureMapAreUsageErrors) {
  TempFolder folder;
  EXPECT_NE(testing::usage_error_message([&] { generate(folder / "in", "quadratic"); }).find("no mechanism named 'quadratic'"),
            std::string::npos);
  MechanismOptions options = small_options();
  options.set("feature_map", std::string("tanh"));
  EXPECT_NE(testing::usage_error_message([&] { generate(folder / "in", "linear_attention", DType::float32, options); })
                .find("unknown feature map 'tanh'"),
            std::string::npos);
  EXPECT_TRUE(empty_or_missing(folder / "in"));
}

TEST(ConformanceDescribe, ListsEveryFileOfEveryAdapter) {
  const std::string text = describe_conformance_layout("", small_options());
  for (const std::string& id : conformance_mechanisms()) {
    EXPECT_NE(text.find("#### `" + id + "`"), std::string::npos) << id;
    for (const auto& input : find_conformance_adapter(id).spec(declared_options_of(id, small_options())).inputs) {
      EXPECT_NE(text.find("`" + input.name + ".npy` (in)"), std::string::npos) << id << " " << input.name;
    }
  }
  EXPECT_NE(text.find("`reference_out.npy` (out)"), std::string::npos);
}

TEST(ConformanceRegistry, EveryRegisteredMechanismHasAnAdapter) {
  for (const auto& mechanism : all_mechanisms()) {
    EXPECT_NE(mechanism->conformance(), nullptr)
        << mechanism->info().id << " has no conformance adapter (mechanisms/<id>/conformance.cpp)";
  }
}

// The layout, pinned by hand-computed outputs (independent of the adapters' index arithmetic).
TEST(ConformanceLayout, SoftmaxKvReadsBatchHeadsLengthDim) {
  TempFolder folder;
  const std::int64_t heads = 2, length = 3, dim = 2;
  NpyArray q{{1, heads, length, dim}, {}, NpyDtype::float64}, k = q, v = q;
  for (std::int64_t i = 0; i < heads * length * dim; ++i) {
    q.values.push_back(0.5 * std::sin(1.0 + i));
    k.values.push_back(0.7 * std::cos(2.0 + 3 * i));
    v.values.push_back(static_cast<double>(i));
  }
  for (const auto& [name, array] : {std::pair{"q", q}, std::pair{"k", k}, std::pair{"v", v}}) {
    write_npy(folder / "in" / (std::string(name) + ".npy"), array, false);
  }
  run_conformance({"softmax_kv", folder / "in", folder / "out", DType::float32, small_options(), false});
  const NpyArray reference = read_npy(folder / "out" / "reference_out.npy");
  const NpyArray prefill = read_npy(folder / "out" / "prefill_out.npy");
  const auto at = [&](const NpyArray& a, std::int64_t h, std::int64_t t, std::int64_t c) {
    return a.values[(h * length + t) * dim + c];
  };
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t t = 0; t < length; ++t) {
      double weights[3], sum = 0;
      for (std::int64_t i = 0; i <= t; ++i) {
        double dot = 0;
        for (std::int64_t c = 0; c < dim; ++c) dot += at(q, h, t, c) * at(k, h, i, c);
        weights[i] = std::exp(dot / std::sqrt(2.0));
        sum += weights[i];
      }
      for (std::int64_t c = 0; c < dim; ++c) {
        double expected = 0;
        for (std::int64_t i = 0; i <= t; ++i) expected += weights[i] / sum * at(v, h, i, c);
        EXPECT_NEAR(at(reference, h, t, c), expected, 1e-6) << h << " " << t << " " << c;
        EXPECT_NEAR(at(prefill, h, t, c), expected, 1e-4) << h << " " << t << " " << c;
      }
    }
  }
}

TEST(ConformanceLayout, MambaReadsTheSelectiveScanFnLayout) {
  if (!find_mechanism("mamba") || !find_mechanism("mamba")->conformance()) GTEST_SKIP() << "no mamba adapter";
  TempFolder folder;
  const std::int64_t channels = 2, n = 2, length = 3;
  // u, dt, z [batch, d_inner, length]; B, C [batch, N, length]; A_log [d_inner, N]; dt_bias, D [d_inner].
  const NpyArray u{{1, channels, length}, {0.5, -1.0, 2.0, 1.5, 0.25, -0.75}, NpyDtype::float64};
  const NpyArray dt{{1, channels, length}, {0.1, 0.2, -0.3, 0.4, -0.5, 0.6}, NpyDtype::float64};
  const NpyArray z{{1, channels, length}, {1.0, -0.5, 0.3, 0.7, 2.0, -1.2}, NpyDtype::float64};
  const NpyArray B{{1, n, length}, {0.3, -0.6, 0.9, 1.1, 0.2, -0.4}, NpyDtype::float64};
  const NpyArray C{{1, n, length}, {-0.2, 0.8, 0.5, 0.6, -1.0, 0.35}, NpyDtype::float64};
  const NpyArray A_log{{channels, n}, {0.0, 0.7, -0.3, 0.2}, NpyDtype::float64};
  const NpyArray dt_bias{{channels}, {-1.0, 0.5}, NpyDtype::float64};
  const NpyArray D{{channels}, {0.9, 1.3}, NpyDtype::float64};
  for (const auto& [name, array] : {std::pair{"u", u}, std::pair{"dt", dt}, std::pair{"z", z}, std::pair{"B", B},
                                    std::pair{"C", C}, std::pair{"A_log", A_log}, std::pair{"dt_bias", dt_bias},
                                    std::pair{"D", D}}) {
    write_npy(folder / "in" / (std::string(name) + ".npy"), array, false);
  }
  const auto result = run_conformance({"mamba", folder / "in", folder / "out", DType::float32, small_options(), false});
  EXPECT_TRUE(result.passed) << result.manifest.dump(2);
  const NpyArray reference = read_npy(folder / "out" / "reference_out.npy");
  const NpyArray state = read_npy(folder / "out" / "final_state.npy");
  ASSERT_EQ(reference.shape, (std::vector<std::int64_t>{1, channels, length}));
  ASSERT_EQ(state.shape, (std::vector<std::int64_t>{1, channels, n}));
  // Each value rounded to fp32 first, as the run does.
  const auto f = [](double x) { return static_cast<double>(static_cast<float>(x)); };
  for (std::int64_t c = 0; c < channels; ++c) {
    double h[2] = {0, 0};
    for (std::int64_t t = 0; t < length; ++t) {
      const double x = f(u.values[c * length + t]);
      const double delta = std::log1p(std::exp(f(dt.values[c * length + t]) + f(dt_bias.values[c])));
      double y = f(D.values[c]) * x;
      for (std::int64_t s = 0; s < n; ++s) {
        const double a = -std::exp(f(A_log.values[c * n + s]));
        h[s] = std::exp(delta * a) * h[s] + delta * f(B.values[s * length + t]) * x;
        y += f(C.values[s * length + t]) * h[s];
      }
      const double gate = f(z.values[c * length + t]);
      EXPECT_NEAR(reference.values[c * length + t], y * gate / (1 + std::exp(-gate)), 1e-9) << c << " " << t;
    }
    for (std::int64_t s = 0; s < n; ++s) EXPECT_NEAR(state.values[c * n + s], h[s], 1e-5) << c << " " << s;
  }
}

TEST(ConformanceInputs, PerformerTakesMFromWAndItsFeatureMap) {
  if (!find_mechanism("performer") || !find_mechanism("performer")->conformance()) GTEST_SKIP() << "no adapter";
  TempFolder folder;
  MechanismOptions options = small_options();
  options.set("feature_map", std::string("trig"));
  options.set("features", std::int64_t{24});
  generate(folder / "in", "performer", DType::float32, options);
  EXPECT_EQ(read_npy(folder / "in" / "w.npy").shape, (std::vector<std::int64_t>{12, 16}));
  options.set("features", static_cast<std::int64_t>(std::int64_t{256}));  // a run reads m from w.npy
  const auto result = run_conformance({"performer", folder / "in", folder / "out", DType::float32, options, false});
  EXPECT_EQ(result.manifest["options"]["features"], 24);
  EXPECT_EQ(result.manifest["options"]["feature_map"], "trig");
  EXPECT_EQ(read_npy(folder / "out" / "final_state.npy").shape, (std::vector<std::int64_t>{2, 2, 24, 16}));
  // Trig denominators phi(q).z come close to 0 at unit-scale inputs, which magnifies fp32 rounding
  // (tests/test_performer.cpp holds trig to 1e-3 there too).
  EXPECT_LE(result.manifest["prefill_out"]["vs_reference"]["max_rel_error"].get<double>(), 1e-3)
      << result.manifest.dump(2);
  EXPECT_TRUE(result.manifest["details"].contains("nonpositive_denominators"));
  // A favor+ run on the same folder reads the 12 rows as m = 12.
  options.set("feature_map", std::string("favor+"));
  const auto favor = run_conformance({"performer", folder / "in", folder / "out2", DType::float32, options, false});
  EXPECT_EQ(favor.manifest["options"]["features"], 12);
  EXPECT_TRUE(favor.passed) << favor.manifest.dump(2);
}

TEST(ConformanceCli, QkScaleShapesGeneratedQueriesAndKeys) {
  TempFolder folder;
  ASSERT_EQ(run_cli("conformance --generate " + (folder / "a").string() + " --mechanism performer --length 8 --dim 4 "
                    "--features 8")
                .exit_code,
            0);
  const CliResult scaled = run_cli("conformance --generate " + (folder / "b").string() +
                                   " --mechanism performer --length 8 --dim 4 --features 8 --feature-map trig "
                                   "--qk-scale 0.3");
  ASSERT_EQ(scaled.exit_code, 0) << scaled.err;
  const NpyArray q1 = read_npy(folder / "a" / "q.npy"), q2 = read_npy(folder / "b" / "q.npy");
  const NpyArray v1 = read_npy(folder / "a" / "v.npy"), v2 = read_npy(folder / "b" / "v.npy");
  for (std::size_t i = 0; i < q1.values.size(); ++i) {
    EXPECT_FLOAT_EQ(q2.values[i], 0.3 * q1.values[i]);
    EXPECT_EQ(v2.values[i], v1.values[i]);
  }
  const CliResult run = run_cli("conformance --mechanism performer --feature-map trig --inputs " +
                                (folder / "b").string() + " --outputs " + (folder / "out").string());
  EXPECT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_EQ(run_cli("conformance --generate " + (folder / "c").string() + " --qk-scale 0").exit_code, 2);
}

TEST(ConformanceInputs, MambaWithFewChannelsRunsTheTimeSplitScan) {
  if (!find_mechanism("mamba") || !find_mechanism("mamba")->conformance()) GTEST_SKIP() << "no mamba adapter";
  TempFolder folder;
  // d_inner = 2 rows: fewer than the threads x 4, so the prefill cuts the time axis into chunks.
  generate_conformance_inputs({folder / "in", "mamba", {1, 1, 300, 2}, small_options(), 5, DType::float32});
  const auto result = run_conformance({"mamba", folder / "in", folder / "out", DType::float32, small_options(), false});
  EXPECT_TRUE(result.passed) << result.manifest.dump(2);
  EXPECT_LT(result.manifest["details"]["prefill_chunk"].get<std::int64_t>(), 300);
}

TEST(ConformanceInputs, MambaParametersMustAgreeWithTheSequence) {
  if (!find_mechanism("mamba") || !find_mechanism("mamba")->conformance()) GTEST_SKIP() << "no mamba adapter";
  TempFolder folder;
  generate(folder / "in", "mamba");
  write_npy(folder / "in" / "A_log.npy", NpyArray{{32, 4}, std::vector<double>(128, 0.0), NpyDtype::float32}, true);
  const std::string message = testing::usage_error_message([&] {
    run_conformance({"mamba", folder / "in", folder / "out", DType::float32, small_options(), false});
  });
  EXPECT_NE(message.find("B.npy and A_log.npy disagree on N"), std::string::npos) << message;
  EXPECT_TRUE(empty_or_missing(folder / "out"));
}

// --- through the real executable --------------------------------------------------------------

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

TEST(ConformanceCli, GenerateThenRunWritesOutputsAndAManifest) {
  TempFolder folder;
  const CliResult generated = run_cli("conformance --generate " + quoted(folder / "in") +
                                      " --mechanism linear_attention --batch 1 --heads 2 --length 70 --dim 8 --seed 3");
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  EXPECT_NE(generated.out.find("q.npy"), std::string::npos) << generated.out;
  const CliResult result = run_cli("conformance --mechanism linear_attention --inputs " + quoted(folder / "in") +
                                   " --outputs " + quoted(folder / "out") + " --dtype bf16 --feature-map relu");
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  EXPECT_NE(result.out.find("prefill_out vs reference_out"), std::string::npos) << result.out;
  const nlohmann::json manifest = read_json(folder / "out" / kConformanceManifest);
  EXPECT_TRUE(manifest["passed"].get<bool>());
  EXPECT_EQ(manifest["dtype"], "bfloat16");
  EXPECT_EQ(manifest["options"]["feature_map"], "relu");
  EXPECT_EQ(manifest["axes"]["length"], 70);
  for (const char* file : {"prefill_out.npy", "decode_out.npy", "reference_out.npy", "final_state.npy",
                           "reference_final_state.npy", "final_normalizer.npy", "reference_final_normalizer.npy"}) {
    EXPECT_TRUE(fs::exists(folder / "out" / file)) << file;
  }
}

struct CliBadInput {
  std::string name;
  std::function<void(const fs::path& inputs)> spoil;  // applied to generated softmax_kv inputs
  std::string extra_arguments;
  std::vector<std::string> messages;  // each must appear in stderr
};
void PrintTo(const CliBadInput& input, std::ostream* out) { *out << input.name; }

class ConformanceCliRejects : public ::testing::TestWithParam<CliBadInput> {};

TEST_P(ConformanceCliRejects, WithExitCode2AMessageNamingTheFileAndNoOutput) {
  TempFolder folder;
  const fs::path inputs = folder / "in", outputs = folder / "out";
  generate(inputs, "softmax_kv");
  GetParam().spoil(inputs);
  const CliResult result = run_cli("conformance --mechanism softmax_kv --inputs " + quoted(inputs) + " --outputs " +
                                   quoted(outputs) + " " + GetParam().extra_arguments);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  for (const std::string& message : GetParam().messages) {
    EXPECT_NE(result.err.find(message), std::string::npos) << "'" << message << "' not in: " << result.err;
  }
  EXPECT_TRUE(empty_or_missing(outputs));
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

INSTANTIATE_TEST_SUITE_P(
    ConformanceBadInputs, ConformanceCliRejects,
    ::testing::Values(
        CliBadInput{"missing_file", [](const fs::path& in) { fs::remove(in / "v.npy"); }, "", {"missing input file", "v.npy"}},
        CliBadInput{"shape_mismatch",
                    [](const fs::path& in) {
                      NpyArray v = read_npy(in / "v.npy");
                      v.shape[1] = 1;
                      v.values.resize(static_cast<std::size_t>(v.size()));
                      write_npy(in / "v.npy", v, true);
                    },
                    "",
                    {"k.npy and v.npy disagree on kv_heads"}},
        // K/V heads must divide the query heads (grouped-query attention): 3 K/V heads for 2 query heads.
        CliBadInput{"kv_heads_not_dividing",
                    [](const fs::path& in) {
                      for (const char* name : {"k.npy", "v.npy"}) {
                        NpyArray x = read_npy(in / name);
                        x.shape[1] = 3;
                        x.values.resize(static_cast<std::size_t>(x.size()));
                        write_npy(in / name, x, true);
                      }
                    },
                    "",
                    {"which do not divide q.npy's 2 heads"}},
        CliBadInput{"truncated",
                    [](const fs::path& in) {
                      const std::string bytes = testing::read_text(in / "k.npy");
                      write_bytes(in / "k.npy", bytes.substr(0, bytes.size() - 10));
                    },
                    "",
                    {"k.npy: truncated"}},
        CliBadInput{"wrong_dtype",
                    [](const fs::path& in) {
                      std::string bytes = encode_npy(read_npy(in / "q.npy"));
                      bytes.replace(bytes.find("<f4"), 3, "<i4");
                      write_bytes(in / "q.npy", bytes);
                    },
                    "",
                    {"q.npy: dtype '<i4' is not supported"}},
        CliBadInput{"fortran_order",
                    [](const fs::path& in) {
                      std::string bytes = encode_npy(read_npy(in / "q.npy"));
                      bytes.replace(bytes.find("False"), 5, "True ");
                      write_bytes(in / "q.npy", bytes);
                    },
                    "",
                    {"q.npy: is stored in Fortran order"}},
        CliBadInput{"bad_magic", [](const fs::path& in) { write_bytes(in / "k.npy", "1,2,3\n"); }, "",
                    {"k.npy: not a .npy file"}},
        CliBadInput{"unknown_dtype", [](const fs::path&) {}, "--dtype float16", {"--dtype float16"}},
        CliBadInput{"generate_shape_on_a_run", [](const fs::path&) {}, "--length 12", {"--length shapes --generate only"}},
        CliBadInput{"feature_map_for_softmax", [](const fs::path&) {}, "--feature-map relu", {"softmax_kv takes no --feature-map"}}),
    [](const ::testing::TestParamInfo<CliBadInput>& info) { return info.param.name; });

TEST(ConformanceCli, UsageErrorsWithoutInputs) {
  TempFolder folder;
  CliResult result = run_cli("conformance --mechanism nope --inputs " + quoted(folder.path()) + " --outputs " +
                             quoted(folder / "out"));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("no mechanism named 'nope'"), std::string::npos) << result.err;
  result = run_cli("conformance --mechanism softmax_kv");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--inputs DIR and --outputs DIR"), std::string::npos) << result.err;
  result = run_cli("conformance --mechanism softmax_kv --inputs " + quoted(folder / "none") + " --outputs " +
                   quoted(folder / "out"));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("is not a folder"), std::string::npos) << result.err;
  ASSERT_EQ(run_cli("conformance --generate " + quoted(folder / "in") + " --mechanism softmax_kv --length 8").exit_code, 0);
  result = run_cli("conformance --generate " + quoted(folder / "in") + " --mechanism softmax_kv --length 8");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("never replaces input files"), std::string::npos) << result.err;
}

// Issue 8, items 6 and 13: sizes and limits are checked before anything is allocated or written.
TEST(ConformanceCli, GenerateRefusesWhatItCouldNotHoldOrARunWouldRefuse) {
  TempFolder folder;
  struct Case {
    std::string arguments, message;
  };
  const std::vector<Case> cases = {
      {"--mechanism softmax_kv --length 1000000000", "--length 1000000000 --dim 64: the inputs would need about"},
      {"--mechanism softmax_kv --length 9223372036854775807", "more than 2^63 bytes"},
      {"--length 9223372036854775807 --heads 9223372036854775807", "more than 2^63 bytes"},
      {"--mechanism softmax_kv --dim 100000 --length 4", "softmax_kv takes head_dim up to 256"},
      {"--mechanism performer --features 5000 --length 4", "from 1 to 4096"},
      {"--mechanism softmax_kv --seed -1", "--seed '-1' is not an integer from 0"},
  };
  for (const Case& c : cases) {
    const CliResult result = run_cli("conformance --generate " + quoted(folder / "in") + " " + c.arguments);
    EXPECT_EQ(result.exit_code, 2) << c.arguments << "\n" << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << c.arguments << "\n" << result.err;
    EXPECT_FALSE(fs::exists(folder / "in")) << c.arguments;
  }
  for (const char* empty : {"--generate ''", "--inputs '' --outputs x --mechanism softmax_kv",
                            "--outputs '' --inputs x --mechanism softmax_kv"}) {
    const CliResult result = run_cli(std::string("conformance ") + empty);
    EXPECT_EQ(result.exit_code, 2) << empty;
    EXPECT_NE(result.err.find("is empty; give a folder"), std::string::npos) << result.err;
  }
}

TEST(ConformanceCli, GenerateHintKeepsTheFeatureMap) {
  TempFolder folder;
  const CliResult result = run_cli("conformance --generate " + quoted(folder / "in") +
                                   " --mechanism performer --feature-map trig --features 16 --length 8 --dim 8");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("--feature-map trig"), std::string::npos) << result.out;
}

// Issue 8, item 9: a full disk (here a file-size limit: writes fail with EFBIG) leaves no partial
// set behind, so that a rerun is not refused for files of a set that was never complete.
TEST(ConformanceCli, AWriteThatFailsPartWayLeavesNoPartialSet) {
  TempFolder folder;
  auto limited = [&](const std::string& arguments) {
    const std::string command = "bash -c \"ulimit -f 64; trap '' XFSZ; '" + std::string(executable_path()) +
                                "' conformance " + arguments + " > /dev/null 2> '" + (folder / "err").string() + "'\"";
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  // q, k, v of 8 x 2048 x 16 floats are 1 MiB each: the first file is cut off at 64 KiB.
  EXPECT_EQ(limited("--generate " + quoted(folder / "big") + " --mechanism softmax_kv --length 2048 --dim 16"), 2)
      << testing::read_text(folder / "err");
  EXPECT_FALSE(fs::exists(folder / "big")) << testing::read_text(folder / "err");
  // Inputs of 40 KiB each fit; the fp64 reference output (80 KiB) does not.
  ASSERT_EQ(run_cli("conformance --generate " + quoted(folder / "in") + " --mechanism softmax_kv --length 640 --dim 16 "
                    "--heads 1").exit_code,
            0);
  EXPECT_EQ(limited("--mechanism softmax_kv --inputs " + quoted(folder / "in") + " --outputs " + quoted(folder / "out")),
            2)
      << testing::read_text(folder / "err");
  EXPECT_FALSE(fs::exists(folder / "out")) << testing::read_text(folder / "err");
  fs::create_directory(folder / "out2");
  EXPECT_EQ(limited("--mechanism softmax_kv --inputs " + quoted(folder / "in") + " --outputs " + quoted(folder / "out2")),
            2);
  EXPECT_TRUE(fs::is_empty(folder / "out2"));
  // And with room, the same command writes the whole set.
  const CliResult result = run_cli("conformance --mechanism softmax_kv --inputs " + quoted(folder / "in") +
                                   " --outputs " + quoted(folder / "out2"));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(fs::exists(folder / "out2" / kConformanceManifest));
}

TEST(ConformanceCli, DescribePrintsTheLayout) {
  const CliResult result = run_cli("conformance --describe --mechanism softmax_kv");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("| `q.npy` (in) | [batch, heads, length, dim] |"), std::string::npos) << result.out;
}

}  // namespace
}  // namespace arch_bench::testing
