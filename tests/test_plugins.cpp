// Out-of-tree mechanism plugins (runner/plugins/): loading, registration, every refusal, and the
// example plugin (examples/plugin/window_softmax) measured end to end by the real executable.
// In-process tests never register a plugin globally (the registry is process-wide and other tests
// count its mechanisms); what registration does is checked through the CLI.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "mechanisms/registry.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "core/errors.hpp"
#include "runner/plugins/load_plugin.hpp"
#include "runner/plugins/plugin_api.hpp"
#include "runner/plugins/self_check.hpp"
#include "runner/plugins/sha256.hpp"
#include "support/cli.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/usage_error.hpp"
#include "tests/support/build_paths.hpp"

namespace arch_bench {
namespace {

using testing::read_json;
using testing::read_text;
using testing::run_cli;
using testing::TempFolder;

std::string fixture(const std::string& name) {
  return (std::filesystem::path(testing::plugin_fixture_dir()) / ("libtest_plugin_" + name + ".so")).string();
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using testing::usage_error_or_empty;

TEST(PluginSha256, MatchesTheFipsTestVectors) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(PluginLoading, TheExampleDeclaresItsContractVersionAndOneMechanism) {
  LoadedPlugin plugin = load_plugin(fixture("window_softmax"));
  EXPECT_EQ(plugin.origin.name, "window-softmax");
  EXPECT_EQ(plugin.origin.version, "1.0.0-test");
  EXPECT_EQ(plugin.origin.contract_version, kContractVersion);
  EXPECT_EQ(plugin.origin.path, std::filesystem::canonical(fixture("window_softmax")).string());
  EXPECT_EQ(plugin.origin.sha256, sha256_hex(file_bytes(fixture("window_softmax"))));
  ASSERT_EQ(plugin.mechanisms.size(), 1u);
  const MechanismInfo& info = plugin.mechanisms[0]->info();
  EXPECT_EQ(info.id, "window_softmax");
  EXPECT_EQ(info.state_kind, StateKind::fixed_state);
  EXPECT_NO_THROW(self_check_mechanism(*plugin.mechanisms[0], plugin.origin.path));
}

TEST(PluginLoading, OnePluginMayRegisterSeveralMechanisms) {
  LoadedPlugin plugin = load_plugin(fixture("two_tiny"));
  ASSERT_EQ(plugin.mechanisms.size(), 2u);
  EXPECT_EQ(plugin.mechanisms[0]->info().id, "tiny_a");
  EXPECT_EQ(plugin.mechanisms[1]->info().id, "tiny_b");
  EXPECT_EQ(plugin.origin.version, "2.3.4");
}

// The example's kernels against its fp64 reference, and its recurrent and parallel forms against
// each other: the decode step at position L (a ring of W = 128 slots) equals row L of the causal
// prefill over L + 1 tokens, below and beyond the window.
TEST(PluginLoading, TheExampleMechanismMatchesItsReferenceAndDecodeMatchesPrefill) {
  LoadedPlugin plugin = load_plugin(fixture("window_softmax"));
  const Mechanism& mechanism = *plugin.mechanisms[0];
  CpuBackend backend;
  for (DType dtype : {DType::float32, DType::bfloat16}) {
    for (std::int64_t length : {5, 127, 300}) {
      Cell cell = testing::mechanism_cell("window_softmax", 2, 32, length, dtype, Phase::decode);
      auto decode = mechanism.prepare(cell, 7, backend);
      decode->run();
      const Accuracy decode_accuracy = decode->check();
      EXPECT_TRUE(decode_accuracy.output_finite);
      EXPECT_LE(decode_accuracy.max_rel_error, dtype_tolerance(dtype)) << dtype_name(dtype) << " L=" << length;
      EXPECT_EQ(decode_accuracy.rows_checked, 2);
      cell.phase = Phase::prefill;
      cell.sequence_length = length + 1;
      auto prefill = mechanism.prepare(cell, 7, backend);
      prefill->run();
      const Accuracy prefill_accuracy = prefill->check();
      EXPECT_LE(prefill_accuracy.max_rel_error, dtype_tolerance(dtype)) << dtype_name(dtype) << " L=" << length;
      // The same seeded tokens: the decode output is the prefill's last row of each head.
      const auto out_of = [](const PreparedCell& prepared) { return prepared.buffers().back(); };
      const ByteSpan decoded = out_of(*decode), prefilled = out_of(*prefill);
      const std::size_t row_bytes = 32 * dtype_bytes(dtype);
      for (std::int64_t head = 0; head < 2; ++head) {
        const std::byte* last_row = prefilled.data() + ((head + 1) * (length + 1) - 1) * row_bytes;
        EXPECT_TRUE(std::equal(last_row, last_row + row_bytes, decoded.data() + head * row_bytes))
            << dtype_name(dtype) << " L=" << length << " head " << head;
      }
    }
  }
  Cell cell;
  cell.sequence_length = 512;
  const std::int64_t at_512 = mechanism.state_bytes(cell);
  cell.sequence_length = 8192;
  EXPECT_EQ(mechanism.state_bytes(cell), at_512);  // the ring, not the context
}

TEST(PluginRefusals, MissingFileNotASharedObjectAndNoEntryPoint) {
  EXPECT_NE(usage_error_or_empty([] { load_plugin("/nonexistent/libnothing.so"); }).find("no such file"),
            std::string::npos);
  TempFolder folder;
  const std::string text = (folder / "libfake.so").string();
  std::ofstream(text) << "this is not a library\n";
  EXPECT_NE(usage_error_or_empty([&] { load_plugin(text); }).find("not a shared object"), std::string::npos);
  const std::string missing_entry = usage_error_or_empty([] { load_plugin(fixture("no_entry")); });
  EXPECT_NE(missing_entry.find("no entry point arch_bench_plugin_v1"), std::string::npos) << missing_entry;
}

TEST(PluginRefusals, ContractVersionMismatch) {
  const std::string message = usage_error_or_empty([] { load_plugin(fixture("contract_mismatch")); });
  EXPECT_NE(message.find(fmt::format("contract version {}", kContractVersion + 1)), std::string::npos) << message;
  EXPECT_NE(message.find("rebuild the plugin"), std::string::npos) << message;
}

TEST(PluginRefusals, AnIdThatClashesWithABuiltInRegistersNothing) {
  LoadedPlugin plugin = load_plugin(fixture("clashing_id"));
  const std::size_t before = all_mechanisms().size();
  const std::string message =
      usage_error_or_empty([&] { register_plugin_mechanisms(plugin.origin, std::move(plugin.mechanisms)); });
  EXPECT_NE(message.find("'softmax_kv' is a built-in mechanism's"), std::string::npos) << message;
  EXPECT_EQ(all_mechanisms().size(), before);
  EXPECT_TRUE(loaded_plugins().empty());
  EXPECT_EQ(plugin_origin("softmax_kv"), nullptr);
}

TEST(PluginRefusals, AMechanismWhoseCheckThrowsFailsItsSelfCheck) {
  LoadedPlugin plugin = load_plugin(fixture("throwing_check"));
  ASSERT_EQ(plugin.mechanisms.size(), 1u);
  const std::string message =
      usage_error_or_empty([&] { self_check_mechanism(*plugin.mechanisms[0], plugin.origin.path); });
  EXPECT_NE(message.find("check() threw"), std::string::npos) << message;
  EXPECT_NE(message.find("broken on purpose"), std::string::npos) << message;
}

TEST(PluginFiles, OptionsThenTheEnvironmentFoldersExpandedAndDuplicatesDropped) {
  TempFolder folder;
  std::ofstream(folder / "b.so") << "x";
  std::ofstream(folder / "a.so") << "x";
  std::ofstream(folder / "notes.txt") << "x";
  const std::string a = (folder / "a.so").string(), b = (folder / "b.so").string();
  const std::string environment = folder.path().string() + "::" + a;
  const std::vector<std::string> files = plugin_files({b}, environment.c_str());
  EXPECT_EQ(files, (std::vector<std::string>{b, a}));
  EXPECT_TRUE(plugin_files({}, nullptr).empty());
}

// A folder named like a plugin file on ARCH_BENCH_PLUGIN_PATH was searched for *.so files, found
// none and loaded nothing, silently; `--plugin` of the same folder is refused. Now both are.
TEST(PluginFiles, AFolderNamedLikeAPluginOnThePathIsRefusedByName) {
  TempFolder folder;
  std::filesystem::create_directory(folder / "x.so");
  const std::string entry = (folder / "x.so").string();
  try {
    (void)plugin_files({}, entry.c_str());
    FAIL() << "no error";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("ARCH_BENCH_PLUGIN_PATH entry " + entry + " is a folder"),
              std::string::npos)
        << error.what();
  }
  // A plain folder of plugins is still a folder of plugins.
  std::filesystem::create_directory(folder / "plugins");
  EXPECT_TRUE(plugin_files({}, (folder / "plugins").string().c_str()).empty());
  ::setenv("ARCH_BENCH_PLUGIN_PATH", entry.c_str(), 1);
  const auto list = run_cli("list");
  ::unsetenv("ARCH_BENCH_PLUGIN_PATH");
  EXPECT_EQ(list.exit_code, 2) << list.out;
  EXPECT_NE(list.err.find("x.so is a folder"), std::string::npos) << list.err;
}

// Every refusal through the executable: exit 2, the file named, nothing written.
TEST(PluginCli, BadPluginsExitTwoAndWriteNothing) {
  TempFolder folder;
  std::ofstream(folder / "libfake.so") << "not a library";
  const std::vector<std::pair<std::string, std::string>> cases{
      {(folder / "libmissing.so").string(), "no such file"},
      {(folder / "libfake.so").string(), "not a shared object"},
      {fixture("no_entry"), "no entry point"},
      {fixture("contract_mismatch"), "contract version"},
      {fixture("clashing_id"), "built-in"},
      {fixture("throwing_check"), "check() threw"}};
  for (const auto& [plugin, expected] : cases) {
    const auto run = run_cli("run --mode landscape --candidates linear_attention --sequence-lengths 16 --heads 1 "
                             "--head-dim 16 --repeats 2 --warmup 0 --quiet --results-dir '" +
                             folder.path().string() + "' --plugin '" + plugin + "'");
    EXPECT_EQ(run.exit_code, 2) << plugin << "\n" << run.err;
    EXPECT_NE(run.err.find(expected), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("--plugin"), std::string::npos) << run.err;
    const auto list = run_cli("list --plugin '" + plugin + "'");
    EXPECT_EQ(list.exit_code, 2) << plugin;
  }
  for (const auto& entry : std::filesystem::directory_iterator(folder.path())) {
    EXPECT_EQ(entry.path().extension(), ".so") << "written: " << entry.path();
  }
}

TEST(PluginCli, ListShowsPluginMechanismsFromTheOptionAndTheEnvironment) {
  const auto listed = run_cli("list --json --plugin '" + fixture("two_tiny") + "'");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const nlohmann::json all = nlohmann::json::parse(listed.out);
  int plugin_mechanisms = 0;
  for (const auto& mechanism : all["mechanisms"]) {
    if (!mechanism.contains("plugin")) continue;
    ++plugin_mechanisms;
    EXPECT_EQ(mechanism["plugin"]["version"], "2.3.4");
    EXPECT_EQ(mechanism["plugin"]["sha256"], sha256_hex(file_bytes(fixture("two_tiny"))));
  }
  EXPECT_EQ(plugin_mechanisms, 2);
  ::setenv("ARCH_BENCH_PLUGIN_PATH", fixture("window_softmax").c_str(), 1);
  const auto from_environment = run_cli("list");
  ::unsetenv("ARCH_BENCH_PLUGIN_PATH");
  EXPECT_EQ(from_environment.exit_code, 0) << from_environment.err;
  EXPECT_NE(from_environment.out.find("window_softmax"), std::string::npos) << from_environment.out;
  EXPECT_NE(from_environment.out.find("plugin window-softmax 1.0.0-test"), std::string::npos);
}

// The example plugin in the landscape, against the baseline and a built-in, measured and decided.
TEST(PluginCli, APluginMechanismIsMeasuredEndToEndAndItsRowsNameThePlugin) {
  TempFolder folder;
  const std::string plugin = fixture("window_softmax");
  const auto run = run_cli("run --mode landscape --candidates window_softmax,linear_attention --plugin '" + plugin +
                           "' --sequence-lengths 64,256 --heads 2 --head-dim 32 --dtype float32 --repeats 3 "
                           "--warmup 1 --threads 1 --quiet --run-label plugin-e2e --results-dir '" +
                           folder.path().string() + "'");
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const nlohmann::json report = read_json(folder / "landscape_plugin-e2e.json");
  const std::string sha = sha256_hex(file_bytes(plugin));
  ASSERT_EQ(report["plugins"].size(), 1u);
  EXPECT_EQ(report["plugins"][0]["sha256"], sha);
  EXPECT_EQ(report["plugins"][0]["mechanisms"], nlohmann::json::array({"window_softmax"}));
  int plugin_rows = 0;
  std::set<std::int64_t> state_bytes;
  for (const auto& row : report["metrics"]["rows"]) {
    if (row["mechanism"] != "window_softmax") {
      EXPECT_FALSE(row.contains("plugin")) << row["mechanism"];
      continue;
    }
    ++plugin_rows;
    EXPECT_EQ(row["status"], "ok");
    EXPECT_TRUE(row["within_tolerance"].get<bool>());
    EXPECT_EQ(row["plugin"]["path"], std::filesystem::canonical(plugin).string());
    EXPECT_EQ(row["plugin"]["sha256"], sha);
    EXPECT_EQ(row["plugin"]["version"], "1.0.0-test");
    EXPECT_EQ(row["samples_ms"].size(), 3u);
    if (row["phase"] == "decode") state_bytes.insert(row["state_bytes"].get<std::int64_t>());
  }
  EXPECT_EQ(plugin_rows, 4);  // 2 lengths x decode, prefill
  EXPECT_EQ(state_bytes, (std::set<std::int64_t>{2 * 128 * 2 * 32 * 4}));
  bool candidate_named = false;
  for (const auto& arm : report["candidates"]) {
    if (arm["mechanism"] == "window_softmax") candidate_named = arm["plugin"]["sha256"] == sha;
  }
  EXPECT_TRUE(candidate_named);
  EXPECT_TRUE(report["decision"]["details"]["candidates"].contains("window_softmax"));
  const auto validated = run_cli("validate '" + (folder / "landscape_plugin-e2e.json").string() + "'");
  EXPECT_EQ(validated.exit_code, 0) << validated.err;
}

TEST(PluginCli, DryRunAndPreflightTakeThePlugin) {
  TempFolder folder;
  const std::string plugin = fixture("window_softmax");
  const auto dry = run_cli("run --mode landscape --candidates window_softmax --plugin '" + plugin +
                           "' --sequence-lengths 64 --dry-run --quiet --run-label dry --results-dir '" +
                           folder.path().string() + "'");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  const nlohmann::json report = read_json(folder / "landscape_dry.json");
  EXPECT_EQ(report["evidence_level"], "dry_run");
  int planned = 0;
  for (const auto& cell : report["plan"]) {
    if (cell["mechanism"] == "window_softmax") planned += cell.contains("plugin") ? 1 : 0;
  }
  EXPECT_EQ(planned, 2);
  const auto preflight = run_cli("preflight --profile ARCH-CPU-MECHANISM --mode landscape --candidates window_softmax "
                                 "--sequence-lengths 64 --plugin '" + plugin + "'",
                                 testing::source_dir());
  EXPECT_NE(preflight.exit_code, 2) << preflight.err;
  const auto unknown = run_cli("preflight --profile ARCH-CPU-MECHANISM --mode landscape --candidates window_softmax "
                               "--sequence-lengths 64",
                               testing::source_dir());
  EXPECT_EQ(unknown.exit_code, 2);  // without the plugin, the candidate is unknown
}

}  // namespace
}  // namespace arch_bench
