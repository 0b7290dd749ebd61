// `arch-bench run` end to end through the real executable: bad input gets a clear error, exit 2
// and no file; a good run writes a valid report; results are never overwritten.
#include <gtest/gtest.h>

#include <sched.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "mechanisms/common/cpu_isa.hpp"
#include "mechanisms/common/kernel_variant.hpp"

#include "runner/measure/team_trial.hpp"
#include "runner/report/schema_validation.hpp"
#include "support/cli.hpp"

namespace arch_bench {
namespace {
using testing::CliResult;
using testing::run_cli;
using testing::TempFolder;

// Small, fast settings every CLI run in this file shares.
const std::string kTiny = " --sequence-lengths 64,128 --repeats 3 --warmup 1 --query-heads 2 --head-dim 16 -q";

struct BadInput {
  std::string name;       // test name suffix
  std::string arguments;
  std::string message;    // must appear in stderr
};
// Readable, stable test names (ctest discovers tests by name).
void PrintTo(const BadInput& input, std::ostream* out) { *out << input.name; }

class CliRejects : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliRejects, WithExitCode2AClearMessageAndNoFile) {
  TempFolder folder;
  const auto output = folder / "out.json";
  const CliResult result = run_cli("run --output '" + output.string() + "' " + GetParam().arguments);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find(GetParam().message), std::string::npos) << "stderr was: " << result.err;
  EXPECT_FALSE(std::filesystem::exists(output));
}

INSTANTIATE_TEST_SUITE_P(
    BadInputs, CliRejects,
    ::testing::Values(BadInput{"zero_length", "--sequence-lengths 0,512", "--sequence-lengths: 0 is not positive"},
                      BadInput{"negative_length", "--sequence-lengths -5", "--sequence-lengths"},
                      BadInput{"non_numeric_length", "--sequence-lengths abc", "'abc' is not an integer"},
                      BadInput{"empty_lengths", "--sequence-lengths ''", "--sequence-lengths is empty"},
                      BadInput{"empty_length_item", "--sequence-lengths 512,,1024", "empty item"},
                      BadInput{"zero_batch", "--batch 0", "--batch must be a positive integer"},
                      BadInput{"negative_heads", "--query-heads -1", "--query-heads must be a positive integer"},
                      BadInput{"non_numeric_head_dim", "--head-dim x", "--head-dim"},
                      BadInput{"head_dim_too_wide", "--head-dim 512", "head_dim up to 256"},
                      BadInput{"zero_repeats", "--repeats 0", "--repeats must be a positive integer"},
                      BadInput{"zero_threads", "--threads 0", "--threads must be a positive integer"},
                      BadInput{"absurd_threads", "--threads 100000", "--threads 100000: at most"},
                      BadInput{"unknown_team_trial", "--team-trial maybe", "--team-trial: 'maybe' is neither on nor off"},
                      BadInput{"zero_rounds", "--rounds 0", "--rounds must be a positive integer"},
                      BadInput{"more_rounds_than_repeats", "--repeats 3 --rounds 4",
                               "--rounds must be between 1 and --repeats (3)"},
                      BadInput{"unknown_dtype", "--dtype float16", "unknown dtype 'float16'"},
                      BadInput{"unknown_mode", "--mode quadratic", "unknown mode 'quadratic'"},
                      BadInput{"unknown_phase", "--phase sideways", "unknown phase 'sideways'"},
                      BadInput{"unknown_feature_map", "--feature-map tanh", "unknown feature map 'tanh'"},
                      BadInput{"run_label_with_slash", "--run-label 'a/b'", "--run-label"},
                      BadInput{"unknown_device", "--device tpu", "--device"},
                      BadInput{"unknown_option", "--no-such-option 1", "no-such-option"},
                      // Issue 8: sizes that overflow 64 bits, seeds the schema cannot hold, duplicates.
                      BadInput{"length_2_62", "--sequence-lengths 4611686018427387904",
                               "exceed what any machine can address"},
                      BadInput{"length_2_63_minus_1", "--sequence-lengths 9223372036854775807",
                               "exceed what any machine can address"},
                      BadInput{"huge_batch_and_heads", "--batch 4294967296 --query-heads 4294967296",
                               "exceed what any machine can address"},
                      BadInput{"length_beyond_memory", "--sequence-lengths 1000000000", "MemAvailable"},
                      BadInput{"negative_seed", "--seed -1", "--seed '-1' is not an integer from 0 to"},
                      BadInput{"seed_2_63", "--seed 9223372036854775808", "--seed '9223372036854775808'"},
                      BadInput{"duplicate_length", "--sequence-lengths 16,32,16", "--sequence-lengths: 16 is given twice"},
                      BadInput{"duplicate_phase", "--phase decode,decode", "--phase: decode is given twice"},
                      BadInput{"run_label_too_long", "--run-label " + std::string(300, 'a'), "--run-label is 300 characters"}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return info.param.name; });

TEST(CliRun, UnwritableOutputFolderIsRefusedBeforeMeasuring) {
  TempFolder folder;
  const auto blocker = folder / "file";
  std::ofstream(blocker) << "not a folder";
  const CliResult result = run_cli("run --output '" + (blocker / "out.json").string() + "'" + kTiny);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("output folder"), std::string::npos) << result.err;
}

// Issue 8, items 8 and 13: every output path is checked in full before anything is measured.
TEST(CliRun, OutputPathsAreCheckedInFullBeforeMeasuring) {
  TempFolder folder;
  const std::string tiny = " --sequence-lengths 16 --repeats 1 --warmup 0 --query-heads 1 --head-dim 8 -q";
  struct Case {
    std::string arguments, message;
  };
  const std::vector<Case> cases = {
      {"--output ''", "--output is empty"},
      {"--results-dir ''", "--results-dir is empty"},
      {"--output '" + (folder / "newdir/").string() + "'", "names a folder"},
      {"--output '" + folder.path().string() + "'", "is a folder"},
      {"--output '" + (folder / std::string(250, 'x')).string() + ".json'", "file system takes at most"},
      {"--output '" + (folder / std::string(300, 'd') / "r.json").string() + "'", "longer than the"},
      {"--results-dir '" + folder.path().string() + "' --run-label " + std::string(5000, 'a'), "--run-label is 5000"},
  };
  for (const Case& c : cases) {
    const CliResult result = run_cli("run " + c.arguments + tiny);
    EXPECT_EQ(result.exit_code, 2) << c.arguments.substr(0, 100) << "\n" << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << c.arguments.substr(0, 100) << "\n" << result.err;
    EXPECT_EQ(result.err.find("internal error"), std::string::npos) << result.err;
  }
  EXPECT_TRUE(std::filesystem::is_empty(folder.path()));  // nothing created, not even newdir/
}

TEST(CliRun, ExistingResultIsNeverOverwritten) {
  TempFolder folder;
  const auto output = folder / "out.json";
  std::ofstream(output) << "precious";
  const CliResult result = run_cli("run --output '" + output.string() + "'" + kTiny);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--run-label"), std::string::npos) << result.err;
  EXPECT_EQ(testing::read_text(output), "precious");
}

TEST(CliRun, SeedInvocationWritesAValidReportUnderTheRunLabel) {
  TempFolder folder;
  // Seed 003 cell 5.2, verbatim apart from the tiny sizes, without the `run` subcommand.
  const CliResult result = run_cli(
      "--mode linear_recurrence --semantic-id ARCH-RECURRENT-STATE-MECHANISM --workload-id arch-linear-recurrence-v2 "
      "--run-label seedcheck --profile-id ARCH-CUDA-MECHANISM --sequence-lengths 64,128 --query-heads 2 --head-dim 16 "
      "--dtype bfloat16 --warmup 1 --repeats 3",
      folder.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto path = folder / "results/45_linear_recurrent_state_seedcheck.json";
  ASSERT_TRUE(std::filesystem::exists(path));
  const nlohmann::json report = testing::read_json(path);
  EXPECT_TRUE(schema_errors(report, "result").empty());
  EXPECT_EQ(report["identity"]["profile_id"], "ARCH-CUDA-MECHANISM");
  EXPECT_EQ(report["evidence_level"], "cpu_measured");
  EXPECT_EQ(report["hardware"]["backend"], "cpu");
  // A CPU run records what a parallel region cost it and which hand-written kernel set it entered.
  EXPECT_GT(report["hardware"]["omp_fork_join_us"].get<double>(), 0.0);
  EXPECT_EQ(report["hardware"]["cpu_isa"], cpu_isa_name(cpu_isa()));
  EXPECT_EQ(report["hardware"]["cpu_kernel_variant"], kernel_variant_name(dispatched_kernel_variant()));
  for (const auto& row : report["metrics"]["rows"]) {
    const std::string isa = row["cpu_kernel_isa"].get<std::string>();
    if (row["mechanism"] == "softmax_kv" && cpu_isa() != CpuIsa::portable) {
      // head_dim 16: the AVX2 split kernel's multiple (AVX-512's is 32); the prefill takes any.
      const CpuIsa expected = row["phase"] == "decode" ? CpuIsa::avx2 : cpu_isa();
      EXPECT_EQ(isa, dispatched_kernel_isa(expected)) << row["phase"];
    } else if (row["mechanism"] != "softmax_kv") {
      EXPECT_EQ(isa, kernel_variant_isa(dispatched_kernel_variant())) << row["mechanism"];
    }
    EXPECT_GT(row["host_contention"].get<double>(), 0.0);
  }
  EXPECT_NE(result.err.find("CPU"), std::string::npos);  // the run says where it measured
  EXPECT_EQ(report["metrics"]["rows"].size(), 4u);
  for (const auto& row : report["metrics"]["rows"]) {
    EXPECT_EQ(row["samples_ms"].size(), 3u);
    EXPECT_EQ(row["dtype"], "bfloat16");
    EXPECT_TRUE(row["within_tolerance"].get<bool>());
  }
  EXPECT_EQ(report["decision"]["verdict"], "accept_fixed_state_growth_mechanism");
  EXPECT_NE(result.out.find("decision: accept_fixed_state_growth_mechanism"), std::string::npos);

  // Same label again: refused, and the first report is untouched.
  const std::string before = testing::read_text(path);
  const CliResult again = run_cli("--mode linear_recurrence --run-label seedcheck" + kTiny, folder.path());
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(testing::read_text(path), before);
}

TEST(CliRun, ValidateAcceptsGoodReportsAndRejectsBrokenOnes) {
  TempFolder folder;
  const auto good = folder / "good.json";
  ASSERT_EQ(run_cli("run --output '" + good.string() + "'" + kTiny).exit_code, 0);
  EXPECT_EQ(run_cli("validate '" + good.string() + "'").exit_code, 0);

  nlohmann::json broken = testing::read_json(good);
  broken.erase("decision");
  const auto missing = folder / "missing.json";
  std::ofstream(missing) << broken.dump();
  const CliResult invalid = run_cli("validate '" + missing.string() + "'");
  EXPECT_EQ(invalid.exit_code, 1);
  EXPECT_NE(invalid.out.find("decision"), std::string::npos) << invalid.out;

  const auto garbage = folder / "garbage.json";
  std::ofstream(garbage) << "{ not json";
  EXPECT_EQ(run_cli("validate '" + garbage.string() + "'").exit_code, 2);
}

// Issue 8, item 15 (and issue 16's threading policy): the harness's OpenMP threads spin for a
// bounded time only (GOMP_SPINCOUNT=4000) in every command but `run`; `run` spins while it measures
// (GOMP_SPINCOUNT=50000000) unless other tasks were runnable at its start; a policy the user chose
// is kept; and the report says which policy was in effect, and why.
TEST(CliRun, OpenMpWaitIsChosenPerCommandAndRecorded) {
  TempFolder folder;
  ::setenv("OMP_DISPLAY_ENV", "verbose", 1);  // libgomp says what it read at start-up, before main
  const CliResult listed = run_cli("list");
  const CliResult checked = run_cli("preflight --profile ARCH-CPU-MECHANISM --sequence-lengths 64");
  const auto output = folder / "r.json";
  const CliResult run = run_cli("run --dry-run --output '" + output.string() + "'" + kTiny);
  ::setenv("OMP_WAIT_POLICY", "active", 1);
  const CliResult user = run_cli("list");
  const auto chosen = folder / "active.json";
  const CliResult recorded = run_cli("run --dry-run --output '" + chosen.string() + "'" + kTiny);
  ::unsetenv("OMP_WAIT_POLICY");
  ::unsetenv("OMP_DISPLAY_ENV");
  // `list` runs no OpenMP team, so it starts once with libgomp's own default; `preflight` runs
  // kernels and gets the bounded spin.
  EXPECT_NE(listed.err.find("GOMP_SPINCOUNT = '"), std::string::npos) << listed.err;
  EXPECT_EQ(listed.err.find("GOMP_SPINCOUNT = '4000'"), std::string::npos) << listed.err;
  EXPECT_NE(checked.err.find("GOMP_SPINCOUNT = '4000'"), std::string::npos) << checked.err;
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Whether this machine had other runnable tasks when the run started is not this test's to choose
  // (ctest runs tests side by side): whichever spin the report names is the one libgomp read.
  const std::string policy = testing::read_json(output)["workload"]["omp_wait_policy"];
  if (policy.find("spin while measuring") == 0) {
    EXPECT_EQ(policy, "spin while measuring: no other runnable task at the start (GOMP_SPINCOUNT=50000000)");
    EXPECT_NE(run.err.find("GOMP_SPINCOUNT = '50000000'"), std::string::npos) << run.err;
  } else {
    EXPECT_EQ(policy.rfind("bounded spin: ", 0), 0u) << policy;
    EXPECT_NE(policy.find("other runnable task(s) on"), std::string::npos) << policy;
    EXPECT_NE(policy.find("(GOMP_SPINCOUNT=4000)"), std::string::npos) << policy;
    EXPECT_NE(run.err.find("GOMP_SPINCOUNT = '4000'"), std::string::npos) << run.err;
  }
  EXPECT_NE(user.err.find("OMP_WAIT_POLICY = 'ACTIVE'"), std::string::npos) << user.err;
  ASSERT_EQ(recorded.exit_code, 0) << recorded.err;
  EXPECT_EQ(testing::read_json(chosen)["workload"]["omp_wait_policy"], "active");
}

// The default --threads is the CPUs the process may run on (its affinity mask, which children
// inherit), not every CPU of the machine; more threads than that are run as asked, with a note.
TEST(CliRun, ThreadsDefaultToTheAffinityMaskAndMoreThanItAreNoted) {
  cpu_set_t saved;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);
  TempFolder folder;
  const auto defaulted = folder / "default.json", more = folder / "more.json";
  const CliResult by_default = run_cli("run --dry-run --output '" + defaulted.string() + "'" + kTiny);
  const CliResult three = run_cli("run --dry-run --threads 3 --output '" + more.string() + "'" + kTiny);
  ::sched_setaffinity(0, sizeof(saved), &saved);
  ASSERT_EQ(by_default.exit_code, 0) << by_default.err;
  ASSERT_EQ(three.exit_code, 0) << three.err;
  const auto report = testing::read_json(defaulted), oversubscribed = testing::read_json(more);
  EXPECT_EQ(report["workload"]["threads"], 1);
  EXPECT_EQ(report["hardware"]["host"]["usable_cpus"], 1);
  for (const auto& note : report["notes"]) EXPECT_EQ(note.get<std::string>().find("--threads"), std::string::npos) << note;
  EXPECT_EQ(oversubscribed["workload"]["threads"], 3);
  bool noted = false;
  for (const auto& note : oversubscribed["notes"]) {
    noted = noted || note.get<std::string>().find("--threads 3 is more than the 1 CPU(s) this process may run on") == 0;
  }
  EXPECT_TRUE(noted) << oversubscribed["notes"].dump();
}

// The team trial is on by default and recorded: with two threads every CPU row says how many of its
// samples ran on one thread (the trial's choice, 0 to repeats); off, or on one thread, no row does.
TEST(CliRun, TheTeamTrialIsRecordedPerRowAndCanBeTurnedOff) {
  TempFolder folder;
  const auto trial = folder / "trial.json", off = folder / "off.json", single = folder / "single.json";
  const CliResult with_trial = run_cli("run --threads 2 --cache hot --output '" + trial.string() + "'" + kTiny);
  const CliResult without = run_cli("run --threads 2 --team-trial off --output '" + off.string() + "'" + kTiny);
  const CliResult one = run_cli("run --threads 1 --output '" + single.string() + "'" + kTiny);
  ASSERT_EQ(with_trial.exit_code, 0) << with_trial.err;
  ASSERT_EQ(without.exit_code, 0) << without.err;
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto tried = testing::read_json(trial), untried = testing::read_json(off), alone = testing::read_json(single);
  EXPECT_EQ(tried["workload"]["team_trial"], true);
  EXPECT_EQ(untried["workload"]["team_trial"], false);
  EXPECT_EQ(tried["settings_sources"]["team_trial"], "mode_default");
  EXPECT_EQ(untried["settings_sources"]["team_trial"], "command_line");
  ASSERT_FALSE(tried["metrics"]["rows"].empty());
  for (const auto& row : tried["metrics"]["rows"]) {
    ASSERT_TRUE(row["one_thread_samples"].is_number_integer()) << row.dump();
    EXPECT_GE(row["one_thread_samples"].get<int>(), 0);
    EXPECT_LE(row["one_thread_samples"].get<int>(), row["repeats"].get<int>());
    // One visit per row (one round): its samples ran on one thread exactly when the trial's one-thread
    // median was 5% or more below the team's.
    ASSERT_TRUE(row["trial_team_median_us"].is_number()) << row.dump();
    ASSERT_TRUE(row["trial_one_thread_median_us"].is_number()) << row.dump();
    const bool one_thread_won = row["trial_one_thread_median_us"].get<double>() <=
                                row["trial_team_median_us"].get<double>() * (1.0 - kOneThreadMargin);
    EXPECT_EQ(row["one_thread_samples"].get<int>(), one_thread_won ? row["repeats"].get<int>() : 0) << row.dump();
  }
  for (const auto* report : {&untried, &alone}) {
    for (const auto& row : (*report)["metrics"]["rows"]) {
      EXPECT_TRUE(row["one_thread_samples"].is_null()) << row.dump();
      EXPECT_TRUE(row["trial_team_median_us"].is_null()) << row.dump();
    }
  }
}

// OMP_PROC_BIND makes libgomp bind the starting thread to its first place before main(); the
// re-execution that sets the spin (runner/main.cpp) must not leave the new image that one CPU, nor
// count it as the process's CPUs: the default team is every CPU of the mask, one thread per place.
TEST(CliRun, OpenMpBindingKeepsEveryCpuOfTheProcess) {
  cpu_set_t mask;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(mask), &mask), 0);
  const int cpus = CPU_COUNT(&mask);
  TempFolder folder;
  const auto output = folder / "bound.json";
  ::setenv("OMP_PROC_BIND", "true", 1);
  ::setenv("OMP_DISPLAY_AFFINITY", "true", 1);
  ::setenv("OMP_AFFINITY_FORMAT", "bound thread %n to CPUs %A", 1);
  const CliResult run = run_cli("run --output '" + output.string() + "'" + kTiny);
  ::unsetenv("OMP_PROC_BIND");
  ::unsetenv("OMP_DISPLAY_AFFINITY");
  ::unsetenv("OMP_AFFINITY_FORMAT");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto report = testing::read_json(output);
  EXPECT_EQ(report["workload"]["threads"], cpus);
  EXPECT_EQ(report["hardware"]["host"]["usable_cpus"], cpus);
  for (const auto& note : report["notes"]) EXPECT_EQ(note.get<std::string>().find("--threads"), std::string::npos) << note;
  if (cpus >= 2) {  // the run's teams: thread 0 and thread 1 sat on different CPUs
    ASSERT_NE(run.err.find("bound thread 0 to CPUs"), std::string::npos) << run.err;
    ASSERT_NE(run.err.find("bound thread 1 to CPUs"), std::string::npos) << run.err;
    const auto cpu_of = [&](const std::string& thread) {  // the CPU list after the thread's last line's prefix
      const std::string prefix = "bound thread " + thread + " to CPUs ";
      const std::size_t from = run.err.rfind(prefix) + prefix.size();
      return run.err.substr(from, run.err.find('\n', from) - from);
    };
    EXPECT_NE(cpu_of("0"), cpu_of("1")) << run.err;
  }
}

// `arguments` run with the environment variable `name` set to `value` for that run only.
CliResult run_cli_with_env(const char* name, const char* value, const std::string& arguments) {
  ::setenv(name, value, 1);
  const CliResult result = run_cli(arguments);
  ::unsetenv(name);
  return result;
}

// The report of a tiny decode and prefill run with `name` set to `value`; null (and a failure
// recorded) when the run does not succeed.
nlohmann::json tiny_report_with_env(const char* name, const char* value) {
  TempFolder folder;
  const auto output = folder / "report.json";
  const CliResult result =
      run_cli_with_env(name, value, "run --phase decode,prefill --output '" + output.string() + "'" + kTiny);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.exit_code == 0 ? testing::read_json(output) : nlohmann::json();
}

// Issue 16: every CPU row names the ISA of the kernel it ran; ARCH_BENCH_CPU_ISA=portable takes
// softmax_kv off its hand-written AVX2 set, and the rows say so.
TEST(CliRun, EveryCpuRowRecordsItsKernelIsaAndTheOverrideShows) {
  const nlohmann::json report = tiny_report_with_env("ARCH_BENCH_CPU_ISA", "portable");
  ASSERT_FALSE(report.is_null());
  EXPECT_EQ(report["hardware"]["cpu_isa"], "portable");
  ASSERT_EQ(report["metrics"]["rows"].size(), 8u);
  for (const auto& row : report["metrics"]["rows"]) {
    EXPECT_EQ(row["cpu_kernel_isa"], kernel_variant_isa(dispatched_kernel_variant()))
        << row["mechanism"] << " " << row["phase"];
  }
}

// A bf16 prefill runs on the bf16 dot products by default exactly where they pay (AMD), and
// ARCH_BENCH_CPU_ISA moves it either way: avx512 lowers it, avx512_bf16 asks for it anywhere.
TEST(CliRun, TheBf16PrefillTakesTheDotProductsWhereTheyPayAndTheOverrideMovesIt) {
  if (!cpu_supports(CpuIsa::avx512_bf16)) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  if (std::getenv("ARCH_BENCH_CPU_ISA") != nullptr) GTEST_SKIP() << "ARCH_BENCH_CPU_ISA is set for the whole run";
  const CpuIsa by_default = bf16_dot_products_pay() ? CpuIsa::avx512_bf16 : CpuIsa::avx512;
  for (const auto& [wanted, expected] : {std::pair<std::string, CpuIsa>{"", by_default},
                                         {"avx512", CpuIsa::avx512},
                                         {"avx512_bf16", CpuIsa::avx512_bf16}}) {
    TempFolder folder;
    const auto output = folder / "bf16.json";
    const std::string args = "run --dtype bf16 --phase prefill --output '" + output.string() + "'" + kTiny;
    const CliResult result = wanted.empty() ? run_cli(args, folder.path())
                                            : run_cli_with_env("ARCH_BENCH_CPU_ISA", wanted.c_str(), args);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const nlohmann::json report = testing::read_json(output);
    EXPECT_EQ(report["hardware"]["cpu_isa"], cpu_isa_name(expected)) << "ARCH_BENCH_CPU_ISA=" << wanted;
    for (const auto& row : report["metrics"]["rows"]) {
      if (row["mechanism"] != "softmax_kv") continue;
      EXPECT_EQ(row["cpu_kernel_isa"], dispatched_kernel_isa(expected)) << "ARCH_BENCH_CPU_ISA=" << wanted;
      EXPECT_EQ(row["status"], "ok");
    }
  }
}

// ARCH_BENCH_KERNEL_VARIANT picks the compiled kernels' ISA variant, and the report says which ran.
TEST(CliRun, TheKernelVariantOverrideRunsAndIsRecordedPerRow) {
  if (!cpu_runs_kernel_variant(KernelVariant::x86_64_v3)) GTEST_SKIP() << "this CPU cannot run x86-64-v3";
  const nlohmann::json report = tiny_report_with_env("ARCH_BENCH_KERNEL_VARIANT", "x86-64-v3");
  ASSERT_FALSE(report.is_null());
  EXPECT_EQ(report["hardware"]["cpu_kernel_variant"], "x86-64-v3");
  int compiled_rows = 0;
  for (const auto& row : report["metrics"]["rows"]) {
    if (row["mechanism"] == "softmax_kv") continue;  // hand-written kernels: ARCH_BENCH_CPU_ISA's business
    EXPECT_EQ(row["cpu_kernel_isa"], "x86-64-v3 (run-time dispatch, compiler-vectorised)") << row["mechanism"];
    EXPECT_EQ(row["status"], "ok") << row["mechanism"];
    ++compiled_rows;
  }
  EXPECT_GT(compiled_rows, 0);
}

TEST(CliRun, AnUnknownKernelVariantIsABadInputAndWritesNothing) {
  TempFolder folder;
  const auto output = folder / "never.json";
  const CliResult result =
      run_cli_with_env("ARCH_BENCH_KERNEL_VARIANT", "avx1024", "run --output '" + output.string() + "'" + kTiny);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("ARCH_BENCH_KERNEL_VARIANT='avx1024'"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("build"), std::string::npos) << result.err;  // names the variants there are
  EXPECT_FALSE(std::filesystem::exists(output));
}

// --rounds: the report says how the repeats were taken, and every row still holds all of them.
TEST(CliRun, RoundsAreRecordedAndEveryRowHoldsAllItsRepeats) {
  TempFolder folder;
  const auto output = folder / "rounds.json";
  const CliResult result = run_cli("run --rounds 3 --output '" + output.string() + "'" +
                                   " --sequence-lengths 64,128 --repeats 5 --warmup 1 --query-heads 2 --head-dim 16 -q");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = testing::read_json(output);
  EXPECT_EQ(report["workload"]["rounds"], 3);
  ASSERT_EQ(report["metrics"]["rows"].size(), 4u);
  for (const auto& row : report["metrics"]["rows"]) {
    EXPECT_EQ(row["repeats"], 5) << row["mechanism"];
    EXPECT_EQ(row["samples_ms"].size(), 5u) << row["mechanism"];
  }
}

TEST(CliRun, HelpExplainsEveryRunOption) {
  const CliResult help = run_cli("run --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* option : {"--sequence-lengths", "--batch", "--query-heads", "--head-dim", "--dtype", "--warmup",
                             "--repeats", "--rounds", "--run-label", "--output", "--seed", "--threads", "--device", "--phase",
                             "--cache", "--overwrite"}) {
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
  }
  for (const char* variable : {"ARCH_BENCH_CPU_ISA", "ARCH_BENCH_KERNEL_VARIANT", "OMP_WAIT_POLICY"}) {
    EXPECT_NE(help.out.find(variable), std::string::npos) << variable;
  }
}

TEST(CliRun, ListNamesModesMechanismsAndBackends) {
  const CliResult list = run_cli("list");
  EXPECT_EQ(list.exit_code, 0);
  for (const char* word : {"linear_recurrence", "softmax_kv", "linear_attention", "cpu", "cuda"}) {
    EXPECT_NE(list.out.find(word), std::string::npos) << word;
  }
  const nlohmann::json listing = nlohmann::json::parse(run_cli("list --json").out);
  EXPECT_FALSE(listing["mechanisms"].empty());
}

}  // namespace
}  // namespace arch_bench
