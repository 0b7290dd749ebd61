// Profiles: loading, validation and error messages; settings merged from mode defaults, profile
// and command line; --profile-id stays a pure label.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>

#include "runner/cli/run_options.hpp"
#include "core/errors.hpp"
#include "runner/profiles/profile.hpp"
#include "runner/report/schema_validation.hpp"
#include "support/cli.hpp"
#include "support/usage_error.hpp"
#include "tests/support/build_paths.hpp"

namespace arch_bench::testing {
namespace {

const std::string& kTiny = testing::kTinyRun;
const std::filesystem::path kProfiles = std::filesystem::path(source_dir()) / "profiles";

// A copy of the CPU profile under another id, with settings a test can recognise.
std::filesystem::path write_test_profile(const std::filesystem::path& folder, const std::string& id) {
  nlohmann::json profile = read_json(kProfiles / "ARCH-CPU-MECHANISM.json");
  profile["id"] = id;
  profile["measurement"]["warmup"] = 0;
  profile["measurement"]["repeats"] = 2;
  profile["measurement"]["cache_state"] = "hot";
  std::filesystem::create_directories(folder);
  const std::filesystem::path path = folder / (id + ".json");
  std::ofstream(path) << profile.dump(2);
  return path;
}

std::string usage_error_of(const std::string& spec) {
  return testing::usage_error_or_empty([&] { load_profile(spec); });
}

TEST(ProfileFiles, EveryShippedProfileMatchesTheSchemaAndItsFileName) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kProfiles)) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    const nlohmann::json document = read_json(entry.path());
    EXPECT_EQ(schema_errors(document, "profile"), std::vector<std::string>{}) << entry.path();
    EXPECT_EQ(document.at("id"), entry.path().stem().string());
  }
  EXPECT_GE(count, 2);
}

TEST(ProfileLoad, ShippedProfilesAreFoundByIdFromAnyFolder) {
  // The test runs from the build folder: the id resolves through the source dir baked in.
  const Profile cuda = load_profile("ARCH-CUDA-MECHANISM");
  EXPECT_EQ(cuda.backend, "cuda");
  EXPECT_EQ(cuda.evidence_level, "gpu_measured");
  EXPECT_EQ(cuda.measurement.timing_method, "cuda_events_batched");
  EXPECT_EQ(cuda.measurement.warmup, 10);
  EXPECT_EQ(cuda.measurement.repeats, 100);
  EXPECT_EQ(cuda.device.device_count_min, 1);
  EXPECT_EQ(cuda.device.compute_capability_min.value_or(""), "8.0");
  EXPECT_GE(cuda.device.free_memory_margin, 1.0);

  const Profile cpu = load_profile("ARCH-CPU-MECHANISM");
  EXPECT_EQ(cpu.backend, "cpu");
  EXPECT_EQ(cpu.evidence_level, "cpu_measured");
  EXPECT_EQ(cpu.measurement.steps_per_sample, 1);
  EXPECT_GT(cpu.thresholds.max_rel_stdev, 0.0);

  const auto ids = known_profile_ids();
  EXPECT_NE(std::find(ids.begin(), ids.end(), "ARCH-CPU-MECHANISM"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "ARCH-CUDA-MECHANISM"), ids.end());
}

TEST(ProfileLoad, AcceptsAPathToAJsonFile) {
  TempFolder folder;
  const auto path = write_test_profile(folder.path(), "TEST-CPU");
  const Profile profile = load_profile(path.string());
  EXPECT_EQ(profile.id, "TEST-CPU");
  EXPECT_EQ(profile.measurement.cache_state, CacheState::hot);
  EXPECT_EQ(profile.path, path);
}

TEST(ProfileLoad, UnknownIdListsTheKnownProfiles) {
  const std::string message = usage_error_of("NO-SUCH-PROFILE");
  EXPECT_NE(message.find("unknown profile 'NO-SUCH-PROFILE'"), std::string::npos) << message;
  EXPECT_NE(message.find("ARCH-CPU-MECHANISM"), std::string::npos) << message;
  EXPECT_NE(message.find("ARCH-CUDA-MECHANISM"), std::string::npos) << message;

  const CliResult cli = run_cli("run --dry-run --profile NO-SUCH-PROFILE" + kTiny);
  EXPECT_EQ(cli.exit_code, 2) << cli.err;
  EXPECT_NE(cli.err.find("ARCH-CPU-MECHANISM, ARCH-CUDA-MECHANISM"), std::string::npos) << cli.err;
}

TEST(ProfileLoad, MalformedFileIsBadInputNamingTheFile) {
  TempFolder folder;
  const auto broken = folder / "BROKEN.json";
  std::ofstream(broken) << "{\"id\": \"BROKEN\",";
  const auto incomplete = folder / "INCOMPLETE.json";
  std::ofstream(incomplete) << R"({"profile_schema_version": "1.0.0", "id": "INCOMPLETE", "backend": "gpu"})";

  EXPECT_NE(usage_error_of(broken.string()).find("not valid JSON"), std::string::npos);
  const std::string schema_message = usage_error_of(incomplete.string());
  EXPECT_NE(schema_message.find("does not match schemas/profile.schema.json"), std::string::npos) << schema_message;

  for (const auto& path : {broken, incomplete}) {
    const CliResult cli = run_cli("preflight --profile '" + path.string() + "'");
    EXPECT_EQ(cli.exit_code, 2) << cli.err;
    EXPECT_NE(cli.err.find(path.string()), std::string::npos) << cli.err;
    const CliResult run = run_cli("run --output '" + (folder / "out.json").string() + "' --profile '" +
                                  path.string() + "'" + kTiny);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find(path.string()), std::string::npos) << run.err;
    EXPECT_FALSE(std::filesystem::exists(folder / "out.json"));
  }
}

// Issue 8, defects 3, 4 and 12 for profiles: a 100,000-character id (std::regex recursed per
// character), a number no double holds, nesting past 64 levels, a FIFO and a long spec are exit 2.
TEST(ProfileLoad, HostileProfilesAreBadInputNeverACrash) {
  TempFolder folder;
  nlohmann::json long_id = read_json(kProfiles / "ARCH-CPU-MECHANISM.json");
  long_id["id"] = std::string(100000, 'P');
  std::ofstream(folder / "LONG.json") << long_id.dump();
  std::string text = read_json(kProfiles / "ARCH-CPU-MECHANISM.json").dump();
  text.insert(text.find('{') + 1, "\"x\": 1e400, ");
  std::ofstream(folder / "HUGE.json") << text;
  std::ofstream(folder / "DEEP.json") << "{\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  ASSERT_EQ(::mkfifo((folder / "FIFO.json").c_str(), 0600), 0);
  for (const char* name : {"LONG.json", "HUGE.json", "DEEP.json", "FIFO.json"}) {
    const std::string path = (folder / name).string();
    EXPECT_NE(usage_error_of(path).find(path), std::string::npos) << name;
    const CliResult cli = run_cli("preflight --profile '" + path + "'");
    EXPECT_EQ(cli.exit_code, 2) << name << ": " << cli.err.substr(0, 2000);
    EXPECT_EQ(cli.err.find("internal error"), std::string::npos) << cli.err.substr(0, 2000);
  }
  EXPECT_NE(usage_error_of(std::string(100000, 'P')), "");  // an id too long for any file name
  EXPECT_NE(usage_error_of(std::string(5000, 'p') + "/x.json"), "");
}

TEST(ProfileLoad, IdMustEqualTheFileName) {
  TempFolder folder;
  const auto path = write_test_profile(folder.path(), "TEST-CPU");
  const auto renamed = folder / "OTHER.json";
  std::filesystem::rename(path, renamed);
  EXPECT_NE(usage_error_of(renamed.string()).find("must equal its file name"), std::string::npos);
}

TEST(ProfileSettings, ProfileOverridesModeDefaultsAndCommandLineOverridesProfile) {
  TempFolder folder;
  const Profile profile = load_profile(write_test_profile(folder.path(), "TEST-CPU").string());
  RunOptions options;
  options.repeats = 7;
  options.given = {"repeats"};
  Workload defaults;
  defaults.sequence_lengths = {512};
  const ResolvedSettings settings = resolve_settings(options, defaults, &profile);
  EXPECT_EQ(settings.workload.repeats, 7);
  EXPECT_EQ(settings.workload.warmup, 0);
  EXPECT_EQ(settings.workload.cache_state, CacheState::hot);
  EXPECT_EQ(settings.workload.heads, defaults.heads);
  EXPECT_EQ(settings.device, "cpu");
  EXPECT_EQ(settings.sources.at("repeats"), "command_line");
  EXPECT_EQ(settings.sources.at("warmup"), "profile");
  EXPECT_EQ(settings.sources.at("cache_state"), "profile");
  EXPECT_EQ(settings.sources.at("device"), "profile");
  EXPECT_EQ(settings.sources.at("heads"), "mode_default");

  const ResolvedSettings without = resolve_settings(options, defaults, nullptr);
  EXPECT_EQ(without.workload.warmup, defaults.warmup);
  EXPECT_EQ(without.sources.at("warmup"), "mode_default");
  EXPECT_EQ(without.device, "auto");
}

TEST(ProfileSettings, DeviceContradictingTheProfileIsRefused) {
  const Profile cpu = load_profile("ARCH-CPU-MECHANISM");
  RunOptions options;
  options.device = "cuda";
  options.given = {"device"};
  const Workload defaults;
  EXPECT_THROW(resolve_settings(options, defaults, &cpu), UsageError);
  options.device = "auto";  // defers to the profile
  EXPECT_EQ(resolve_settings(options, defaults, &cpu).device, "cpu");
}

TEST(ProfileSettings, RunReportShowsProfileAndCommandLineSettings) {
  TempFolder folder;
  write_test_profile(folder / "profiles", "TEST-CPU");  // found as ./profiles/TEST-CPU.json
  const auto output = folder / "run.json";
  const CliResult cli = run_cli("run --profile TEST-CPU --output '" + output.string() + "'" + kTiny, folder.path());
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const nlohmann::json report = read_json(output);
  EXPECT_EQ(schema_errors(report, "result"), std::vector<std::string>{});
  EXPECT_EQ(report["identity"]["profile_id"], "TEST-CPU");
  EXPECT_EQ(report["evidence_level"], "cpu_measured");
  EXPECT_EQ(report["workload"]["repeats"], 3);
  EXPECT_EQ(report["workload"]["warmup"], 1);
  EXPECT_EQ(report["workload"]["cache_state"], "hot");
  EXPECT_EQ(report["workload"]["heads"], 8);
  const nlohmann::json& sources = report["settings_sources"];
  EXPECT_EQ(sources["repeats"], "command_line");
  EXPECT_EQ(sources["warmup"], "command_line");
  EXPECT_EQ(sources["sequence_lengths"], "command_line");
  EXPECT_EQ(sources["cache_state"], "profile");
  EXPECT_EQ(sources["profile_id"], "profile");
  EXPECT_EQ(sources["heads"], "mode_default");
  EXPECT_EQ(report["profile"]["id"], "TEST-CPU");
  EXPECT_EQ(report["profile"]["preflight"]["passed"], true);
  for (const auto& row : report["metrics"]["rows"]) EXPECT_EQ(row["samples_ms"].size(), 3u);
}

TEST(ProfileLabel, ProfileIdIsOnlyALabelAndTheRunSaysItMeasuredOnTheCpu) {
  // The seed's invocation: --profile-id ARCH-CUDA-MECHANISM on a machine that measures on the CPU.
  TempFolder folder;
  const auto output = folder / "label.json";
  const CliResult cli = run_cli("--mode linear_recurrence --profile-id ARCH-CUDA-MECHANISM --output '" +
                                output.string() + "'" + kTiny);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const nlohmann::json report = read_json(output);
  EXPECT_EQ(report["identity"]["profile_id"], "ARCH-CUDA-MECHANISM");
  EXPECT_EQ(report["evidence_level"], "cpu_measured");
  EXPECT_EQ(report["hardware"]["backend"], "cpu");
  EXPECT_EQ(report["settings_sources"]["profile_id"], "command_line");
  EXPECT_FALSE(report.contains("profile"));  // nothing was loaded or checked
  EXPECT_NE(report["notes"].dump().find("measured on the CPU backend"), std::string::npos) << report["notes"];
}

TEST(ProfileLabel, HelpExplainsProfileVersusProfileId) {
  const CliResult help = run_cli("run --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--profile ID|FILE"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("Label only"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace arch_bench::testing
