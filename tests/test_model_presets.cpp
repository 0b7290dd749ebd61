// Model presets (runner/models/): every shipped preset validates, the footprint figures match sums
// done by hand, bad input is exit 2 with nothing written, and `run --model` writes a valid report
// whose `model` block adds up from its own rows.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "mechanisms/registry.hpp"
#include "runner/models/model_figures.hpp"
#include "runner/models/model_footprint.hpp"
#include "runner/models/model_preset.hpp"
#include "runner/models/model_workload.hpp"
#include "runner/report/schema_validation.hpp"
#include "support/cli.hpp"
#include "support/usage_error.hpp"

namespace arch_bench::testing {
namespace {

constexpr std::int64_t kKiB = 1024, kMiB = 1024 * kKiB, kGiB = 1024 * kMiB;

// A small hybrid a 2-core host measures in seconds: 2 attention layers (4 query heads sharing
// nothing) and 6 linear-attention layers, at head_dim 16.
nlohmann::json tiny_hybrid() {
  return {{"id", "tiny-hybrid"},
          {"name", "a tiny hybrid for tests"},
          {"source", "tests/test_model_presets.cpp"},
          {"parameter_count", 1000},
          {"weight_dtype", "bfloat16"},
          {"layers",
           {{{"name", "attention"}, {"mechanism", "softmax_kv"}, {"count", 2}, {"heads", 4}, {"head_dim", 16}},
            {{"name", "linear"}, {"mechanism", "linear_attention"}, {"count", 6}, {"heads", 2}, {"head_dim", 16}}}}};
}

std::filesystem::path write_preset(const std::filesystem::path& folder, const nlohmann::json& preset,
                                   const std::string& name = "") {
  const auto path = folder / ((name.empty() ? preset["id"].get<std::string>() : name) + ".json");
  std::ofstream(path) << preset.dump(2);
  return path;
}

TEST(ModelPresetFiles, EveryShippedPresetValidatesAndLoads) {
  const std::vector<std::string> ids = known_model_ids();
  for (const char* id : {"llama-3.1-8b", "llama-3.1-70b", "mistral-7b-v0.1", "qwen2.5-7b", "gemma-2-9b", "mamba-2.8b",
                         "mamba2-2.7b", "rwkv7-0.1b", "rwkv7-0.4b", "rwkv7-1.5b", "rwkv7-2.9b", "gated-deltanet-1.3b",
                         "retnet-1.3b", "retnet-6.7b", "qwen3-next-80b-a3b", "jamba-v0.1"}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  }
  for (const std::string& id : ids) {
    const ModelPreset preset = load_model_preset(id);
    EXPECT_EQ(preset.id, id);
    EXPECT_TRUE(schema_errors(preset.document, "model").empty()) << id;
    EXPECT_EQ(preset.sha256.size(), 64u) << id;
    EXPECT_NE(preset.source.find("http"), std::string::npos) << id << ": cite the published config";
  }
}

TEST(ModelFootprint, Llama31_8bHoldsAQuarterMebibytePerTwoTokens) {
  // 32 layers x 8 K/V heads x 128 x 2 (K and V) x 2 bytes = 128 KiB per token.
  const ModelPreset preset = load_model_preset("llama-3.1-8b");
  EXPECT_EQ(*sequence_state_bytes(preset, 1, DType::bfloat16), 128 * kKiB);
  EXPECT_EQ(*sequence_state_bytes(preset, 131072, DType::bfloat16), 16 * kGiB);
  EXPECT_EQ(weights_bytes(preset), 8030261248LL * 2);
  // 141 GiB less 14.96 GiB of weights holds 7 sequences of 16 GiB.
  EXPECT_EQ(max_batch(141 * kGiB, weights_bytes(preset), 16 * kGiB), 7);
}

TEST(ModelFootprint, SlidingWindowAndHybridsFollowTheirLayers) {
  // Mistral: the cache stops at the window (4096 tokens x 128 KiB).
  const ModelPreset mistral = load_model_preset("mistral-7b-v0.1");
  EXPECT_EQ(*sequence_state_bytes(mistral, 1024, DType::bfloat16), 1024 * 128 * kKiB);
  EXPECT_EQ(*sequence_state_bytes(mistral, 100000, DType::bfloat16), 4096 * 128 * kKiB);
  // Gemma 2: 21 local layers capped at 4096 tokens, 21 global ones growing; 8 K/V heads x 256.
  const ModelPreset gemma = load_model_preset("gemma-2-9b");
  const std::int64_t per_token_per_layer = 2 * 8 * 256 * 2;
  EXPECT_EQ(*sequence_state_bytes(gemma, 32768, DType::bfloat16),
            21 * 4096 * per_token_per_layer + 21 * 32768 * per_token_per_layer);
  // Jamba: 4 attention layers (8 x 128 K/V) grow, 28 Mamba layers hold d_inner x N fp32.
  const ModelPreset jamba = load_model_preset("jamba-v0.1");
  EXPECT_EQ(*sequence_state_bytes(jamba, 8192, DType::bfloat16), 4 * 8192 * (2 * 8 * 128 * 2) + 28 * 8192 * 16 * 4);
}

TEST(ModelFootprint, TheKvFormulaAgreesWithSoftmaxKvsOwnStateBytes) {
  // A multi-head attention layer runs on this build, so its bytes come from the mechanism; they must
  // equal the formula that stands in for layers the build cannot run yet.
  ModelLayer layer{"attention", "softmax_kv", 1, 8, 64, 8, std::nullopt, std::nullopt, nlohmann::json::object()};
  const LayerFootprint measured = layer_footprint(layer, 2048, DType::bfloat16);
  EXPECT_EQ(measured.source, "mechanism");
  EXPECT_EQ(*measured.bytes_per_layer, 2 * 2048 * 8 * 64 * 2);
}

TEST(ModelPresetLoad, PresetsThatNeedWhatThisBuildLacksSaySo) {
  // Each layer type names what is missing rather than running something else in its place.
  for (const ModelLayer& layer : load_model_preset("mistral-7b-v0.1").layers) {
    if (find_mechanism("sliding_window") == nullptr) {
      EXPECT_EQ(cannot_run_yet(layer).value_or(""), "mechanism sliding_window not registered");
    }
  }
  const ModelLayer llama = load_model_preset("llama-3.1-8b").layers.front();
  const auto& specs = find_mechanism("softmax_kv")->option_specs();
  const bool gqa = std::any_of(specs.begin(), specs.end(), [](const OptionSpec& s) { return s.key == "kv_heads"; });
  if (!gqa) {
    EXPECT_EQ(cannot_run_yet(llama).value_or(""), "option kv_heads not declared by softmax_kv");
    const CliResult cli = run_cli("run --model llama-3.1-8b --sequence-lengths 8 --repeats 1");
    EXPECT_EQ(cli.exit_code, 2) << cli.err;
    EXPECT_NE(cli.err.find("cannot run yet: layer type attention: option kv_heads not declared by softmax_kv"),
              std::string::npos)
        << cli.err;
  } else {
    EXPECT_FALSE(cannot_run_yet(llama));
  }
}

TEST(ModelPresetLoad, BadInputIsExitTwoAndNothingWritten) {
  TempFolder folder;
  const auto out = folder / "out.json";
  const std::string tail = " --sequence-lengths 8 --repeats 1 --output '" + out.string() + "'";
  // Unknown preset: the known ones are listed.
  CliResult cli = run_cli("run --model no-such-model" + tail);
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_NE(cli.err.find("unknown model preset 'no-such-model'"), std::string::npos) << cli.err;
  EXPECT_NE(cli.err.find("llama-3.1-8b"), std::string::npos) << cli.err;
  // A file that does not match the schema.
  nlohmann::json bad = tiny_hybrid();
  bad["layers"][0].erase("heads");
  const auto bad_path = write_preset(folder.path(), bad);
  cli = run_cli("run --model '" + bad_path.string() + "'" + tail);
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_NE(cli.err.find("does not match schemas/model.schema.json"), std::string::npos) << cli.err;
  // K/V heads that do not divide the query heads.
  nlohmann::json uneven = tiny_hybrid();
  uneven["layers"][0]["kv_heads"] = 3;
  cli = run_cli("run --model '" + write_preset(folder.path(), uneven).string() + "'" + tail);
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_NE(cli.err.find("kv_heads 3 does not divide heads 4"), std::string::npos) << cli.err;
  // A window of 0.
  nlohmann::json no_window = tiny_hybrid();
  no_window["layers"][0]["mechanism"] = "sliding_window";
  no_window["layers"][0]["window"] = 0;
  cli = run_cli("run --model '" + write_preset(folder.path(), no_window).string() + "'" + tail);
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_NE(cli.err.find("window"), std::string::npos) << cli.err;
  // An id that is not the file name.
  cli = run_cli("run --model '" + write_preset(folder.path(), tiny_hybrid(), "renamed").string() + "'" + tail);
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_NE(cli.err.find("must equal its file name"), std::string::npos) << cli.err;
  // Another mode.
  cli = run_cli("run --model '" + write_preset(folder.path(), tiny_hybrid()).string() + "' --mode mamba_scan" + tail);
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_NE(cli.err.find("--model runs --mode landscape"), std::string::npos) << cli.err;
  // --memory-gib without a model.
  cli = run_cli("run --memory-gib 80" + tail);
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(ModelWorkload, ArmsAreTheModelsLayersAtTheirShapesThenTheCandidatesAtTheAttentions) {
  TempFolder folder;
  ModelRun run = make_model_run(load_model_preset(write_preset(folder.path(), tiny_hybrid()).string()), {}, kGiB, "test");
  const std::vector<Arm> arms = model_arms(run, {"mamba", "linear_attention"}, {});
  ASSERT_EQ(arms.size(), 3u);  // linear_attention is the model's own layer: measured once, at its shape
  EXPECT_EQ(arms[0].mechanism, "softmax_kv");
  EXPECT_EQ(arms[0].role, Role::baseline);
  EXPECT_EQ(arms[0].variant, "layer=attention");
  EXPECT_EQ(arms[0].heads, 4);
  EXPECT_EQ(arms[1].mechanism, "linear_attention");
  EXPECT_EQ(arms[1].variant, "layer=linear");
  EXPECT_EQ(arms[1].heads, 2);
  EXPECT_EQ(arms[2].mechanism, "mamba");
  EXPECT_EQ(arms[2].variant, "instead_of=attention");
  EXPECT_EQ(arms[2].heads, 4);
  EXPECT_EQ(arms[2].head_dim, 16);
}

// Attention replaced by a sliding window keeps the model's K/V grouping (Llama 3.1 8B: 8 K/V heads
// for 32 query heads), so its cache is the model's bounded at W, not a multi-head one 4x larger.
TEST(ModelWorkload, AReplacementThatGroupsKvHeadsKeepsTheAttentionsGrouping) {
  if (find_mechanism("sliding_window") == nullptr) GTEST_SKIP() << "sliding_window not registered";
  ModelRun run = make_model_run(load_model_preset("llama-3.1-8b"), {}, kGiB, "test");
  const std::vector<Arm> arms = model_arms(run, {"sliding_window", "mamba"}, {});
  ASSERT_EQ(arms.size(), 3u);
  EXPECT_EQ(arms[1].mechanism, "sliding_window");
  ASSERT_NE(arms[1].options.find("kv_heads"), nullptr);
  EXPECT_EQ(std::get<std::int64_t>(*arms[1].options.find("kv_heads")), 8);
  EXPECT_EQ(arms[2].options.find("kv_heads"), nullptr) << "mamba declares no kv_heads";
}

TEST(ModelWorkload, CommandLineOverridesAreAppliedAndRecorded) {
  TempFolder folder;
  ModelOverrides overrides;
  overrides.head_dim = 32;
  const ModelRun run =
      make_model_run(load_model_preset(write_preset(folder.path(), tiny_hybrid()).string()), overrides, kGiB, "test");
  EXPECT_EQ(run.preset.layers[0].head_dim, 32);  // the attention layer: the one candidates replace
  EXPECT_EQ(run.preset.layers[1].head_dim, 16);
  ASSERT_EQ(run.overrides.size(), 1u);
  EXPECT_EQ(run.overrides[0]["field"], "head_dim");
  EXPECT_EQ(run.overrides[0]["layer"], "attention");
  EXPECT_EQ(run.overrides[0]["preset"], 16);
  EXPECT_EQ(run.overrides[0]["value"], 32);
}

Row decode_row(const std::string& mechanism, const std::string& variant, std::int64_t length, double ms,
               std::int64_t state_bytes) {
  Row row;
  row.cell = Cell{mechanism, Phase::decode, length, 1, 4, 16, DType::bfloat16, {}};
  row.variant = variant;
  row.state_bytes = state_bytes;
  row.samples_ms = {ms};
  row.stats.median = ms;
  return row;
}

TEST(ModelFigures, WholeModelStepStateBatchAndCrossoverAddUpFromTheLayerRows) {
  TempFolder folder;
  // 2 attention + 6 linear layers; memory 10000 bytes, weights 1000 x 2 bytes.
  const ModelRun run =
      make_model_run(load_model_preset(write_preset(folder.path(), tiny_hybrid()).string()), {}, 10000, "test");
  const std::vector<Row> rows{
      decode_row("softmax_kv", "layer=attention", 16, 1.0, 100), decode_row("softmax_kv", "layer=attention", 64, 4.0, 400),
      decode_row("linear_attention", "layer=linear", 16, 0.5, 50), decode_row("linear_attention", "layer=linear", 64, 0.5, 50),
      decode_row("mamba", "instead_of=attention", 16, 2.0, 10), decode_row("mamba", "instead_of=attention", 64, 2.0, 10)};
  const ModelFigures at_16 = model_figures(run, rows, 16);
  EXPECT_DOUBLE_EQ(*at_16.decode_step_ms, 2 * 1.0 + 6 * 0.5);
  EXPECT_EQ(*at_16.state_bytes_per_sequence, 2 * 100 + 6 * 50);
  EXPECT_EQ(at_16.max_batch, (10000 - 2000) / 500);
  const ModelFigures at_64 = model_figures(run, rows, 64);
  EXPECT_DOUBLE_EQ(*at_64.decode_step_ms, 2 * 4.0 + 6 * 0.5);
  EXPECT_EQ(at_64.max_batch, (10000 - 2000) / 1100);
  Arm mamba{"mamba", Role::candidate, "instead_of=attention", {}};
  const ModelFigures replaced = replaced_figures(run, rows, mamba, 64);
  EXPECT_DOUBLE_EQ(*replaced.decode_step_ms, 2 * 2.0 + 6 * 0.5);
  EXPECT_EQ(*replaced.state_bytes_per_sequence, 2 * 10 + 6 * 50);
  EXPECT_EQ(replaced.max_batch, (10000 - 2000) / 320);
  // Slower at 16 (7 ms against 5), faster at 64 (7 against 11): the crossover is 64.
  EXPECT_EQ(model_crossover(run, rows, mamba, {16, 64}), 64);
  // A layer type without its row leaves the step unknown, never a partial sum.
  EXPECT_FALSE(model_figures(run, std::vector<Row>(rows.begin() + 1, rows.end()), 16).decode_step_ms);
}

TEST(ModelRunCli, ADryRunPlansBytesAndBatchesWithoutMeasuring) {
  TempFolder folder;
  const auto out = folder / "dry.json";
  const CliResult cli = run_cli("run --model '" + write_preset(folder.path(), tiny_hybrid()).string() +
                                "' --dry-run --sequence-lengths 1024 --candidates mamba --memory-gib 1 --output '" +
                                out.string() + "'");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const nlohmann::json report = read_json(out);
  EXPECT_TRUE(schema_errors(report, "result").empty());
  EXPECT_EQ(report["workload"]["phases"], nlohmann::json::array({"decode"}));  // a model run's default
  EXPECT_EQ(report["settings_sources"]["phases"], "model");
  const nlohmann::json& at = report["model"]["lengths"][0];
  EXPECT_TRUE(at["model"]["decode_step_ms"].is_null());
  // 2 attention layers of 4 x 16 K/V at 1024 tokens, bf16; 6 linear-attention states of 2 heads x (16^2 + 16) fp32.
  const std::int64_t state = 2 * (2 * 1024 * 4 * 16 * 2) + 6 * (2 * (16 * 16 + 16) * 4);
  EXPECT_EQ(at["model"]["state_bytes_per_sequence"], state);
  EXPECT_EQ(at["model"]["max_batch"], (kGiB - 2000) / state);
}

TEST(ModelWorkload, AnOptionOverridesOnlyTheLayersThatDeclareItAndIsRecordedWhereThePresetSetIt) {
  ModelOverrides overrides;
  overrides.options.set("state_size", std::int64_t{32});
  overrides.options.set("qk_scale", 0.5);
  const ModelRun run = make_model_run(load_model_preset("mamba-2.8b"), overrides, kGiB, "test");
  EXPECT_EQ(run.preset.layers[0].d_state, 32);  // mamba declares state_size; the preset said 16
  ASSERT_EQ(run.overrides.size(), 1u) << run.overrides.dump();
  EXPECT_EQ(run.overrides[0]["field"], "state_size");
  EXPECT_EQ(run.overrides[0]["layer"], "mamba");
  EXPECT_EQ(run.overrides[0]["preset"], 16);
}

TEST(ModelRunCli, ReportCarriesTheModelBlockThatAddsUpFromItsRows) {
  TempFolder folder;
  const auto preset = write_preset(folder.path(), tiny_hybrid());
  const CliResult cli = run_cli("run --model '" + preset.string() +
                                    "' --sequence-lengths 16,64 --phase decode --warmup 0 --repeats 3 --threads 1 "
                                    "--candidates mamba --head-dim 32 --memory-gib 1 --run-label t --results-dir '" +
                                    folder.path().string() + "' --quiet",
                                folder.path());
  ASSERT_EQ(cli.exit_code, 0) << cli.err << cli.out;
  const auto path = folder / "landscape_tiny-hybrid_t.json";
  ASSERT_TRUE(std::filesystem::exists(path)) << cli.out;
  const nlohmann::json report = read_json(path);
  EXPECT_TRUE(schema_errors(report, "result").empty());
  EXPECT_EQ(report["schema_version"], "1.1.0");
  EXPECT_EQ(report["identity"]["workload_id"], "arch-landscape-v1-tiny-hybrid");
  const nlohmann::json& model = report["model"];
  EXPECT_EQ(model["id"], "tiny-hybrid");
  EXPECT_EQ(model["sha256"].get<std::string>().size(), 64u);
  ASSERT_EQ(model["overrides"].size(), 1u);
  EXPECT_EQ(model["overrides"][0]["field"], "head_dim");
  EXPECT_EQ(model["memory"]["bytes"], kGiB);
  EXPECT_EQ(model["memory"]["weights_reserve_bytes"], 2000);
  ASSERT_EQ(model["lengths"].size(), 2u);
  for (const nlohmann::json& at : model["lengths"]) {
    const std::int64_t length = at["sequence_length"];
    // The model's step is each layer type's median x its count; its state the same sum of row bytes.
    double step = 0;
    std::int64_t state = 0;
    for (const nlohmann::json& row : report["metrics"]["rows"]) {
      if (row["sequence_length"] != length) continue;
      const std::int64_t count = row["variant"] == "layer=attention" ? 2 : row["variant"] == "layer=linear" ? 6 : 0;
      step += static_cast<double>(count) * row["median_step_ms"].get<double>();
      state += count * row["state_bytes"].get<std::int64_t>();
    }
    EXPECT_NEAR(at["model"]["decode_step_ms"].get<double>(), step, 1e-9 * step);
    EXPECT_EQ(at["model"]["state_bytes_per_sequence"], state);
    // softmax_kv at 4 heads x 32 (the override) x L tokens x K,V x 2 bytes per attention layer.
    EXPECT_EQ(at["model"]["per_layer_type"][0]["state_bytes_per_layer"], 2 * length * 4 * 32 * 2);
    EXPECT_EQ(at["model"]["max_batch"], (kGiB - 2000) / state);
    ASSERT_EQ(at["replaced_by"].size(), 1u);  // mamba in place of the attention layers
    EXPECT_EQ(at["replaced_by"][0]["mechanism"], "mamba");
  }
  EXPECT_TRUE(report["decision"]["details"].contains("model"));
  // The model's own linear layers are measured, not judged as a candidate; mamba in place of attention is.
  const nlohmann::json& judged = report["decision"]["details"]["candidates"];
  EXPECT_FALSE(judged.contains("linear_attention (layer=linear)")) << judged.dump();
  EXPECT_TRUE(judged.contains("mamba (instead_of=attention)")) << judged.dump();

  // A 1.0.0 report (no model block) still validates, and diff pairs it with this one.
  nlohmann::json old = report;
  old["schema_version"] = "1.0.0";
  old.erase("model");
  EXPECT_TRUE(schema_errors(old, "result").empty());
  const auto old_path = folder / "old.json";
  std::ofstream(old_path) << old.dump();
  const CliResult diff = run_cli("diff '" + old_path.string() + "' '" + path.string() + "' --fail-on never");
  EXPECT_EQ(diff.exit_code, 0) << diff.err << diff.out;
}

TEST(ModelRunCli, ShardsOfAModelRunMergeIntoTheWholeModelBlock) {
  TempFolder folder;
  const auto preset = write_preset(folder.path(), tiny_hybrid());
  const std::string run = "run --model '" + preset.string() +
                          "' --sequence-lengths 16,64 --phase decode --warmup 0 --repeats 2 --threads 1 "
                          "--candidates mamba --memory-gib 1 --quiet --overwrite";
  for (const char* shard : {"0/2", "1/2"}) {
    const std::string name = std::string("s") + shard[0] + ".json";
    const CliResult cli = run_cli(run + " --shard " + shard + " --output '" + (folder / name).string() + "'");
    ASSERT_EQ(cli.exit_code, 0) << cli.err;
  }
  // The two shards measured this machine's ceilings one after the other while other tests ran; under
  // load those readings drift past merge's 25% default, which is about nodes, not this test.
  const CliResult merged = run_cli("merge '" + (folder / "s0.json").string() + "' '" + (folder / "s1.json").string() +
                                   "' --ceiling-tolerance 1000% --output '" + (folder / "merged.json").string() + "'");
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  const nlohmann::json report = read_json(folder / "merged.json");
  EXPECT_TRUE(schema_errors(report, "result").empty());
  ASSERT_TRUE(report.contains("model"));
  // Every layer type's row is in the merged report, so the whole-model step is known at every length.
  for (const nlohmann::json& at : report["model"]["lengths"]) {
    EXPECT_TRUE(at["model"]["decode_step_ms"].is_number()) << at.dump();
    EXPECT_TRUE(at["replaced_by"][0]["decode_step_ms"].is_number()) << at.dump();
  }
}

TEST(ModelListCli, ListsEveryPresetWithBytesAndBatchOrWhatItLacks) {
  const CliResult cli = run_cli("list --models --json --context 131072 --memory-gib 141");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const nlohmann::json listing = nlohmann::json::parse(cli.out);
  bool found = false;
  for (const nlohmann::json& model : listing["models"]) {
    if (model["id"] != "llama-3.1-8b") continue;
    found = true;
    EXPECT_EQ(model["contexts"][0]["state_bytes_per_sequence"], 16 * kGiB);
    EXPECT_EQ(model["contexts"][0]["max_batch"], 7);
  }
  EXPECT_TRUE(found);
  const CliResult text = run_cli("list --models --memory-gib 80");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("mistral-7b-v0.1"), std::string::npos);
  EXPECT_EQ(run_cli("list --models --context 0").exit_code, 2);
  EXPECT_EQ(run_cli("list --context 8192").exit_code, 2);
}

}  // namespace
}  // namespace arch_bench::testing
