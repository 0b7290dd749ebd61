// run --dry-run, and run --profile whose preflight fails: a schema-valid dry_run report with the
// plan and its predicted bytes, and no timings.
#include <gtest/gtest.h>

#include "mechanisms/registry.hpp"
#include "core/backends/cuda/device_probe.hpp"
#include "runner/pipeline/plan.hpp"
#include "runner/preflight/dry_run.hpp"
#include "runner/report/schema_validation.hpp"
#include "support/cli.hpp"

namespace arch_bench::testing {
namespace {

const std::string& kTiny = testing::kTinyRun;

void expect_no_timings(const nlohmann::json& report) {
  EXPECT_EQ(report["evidence_level"], "dry_run");
  EXPECT_TRUE(report["metrics"]["rows"].empty());
  EXPECT_TRUE(report["hardware"]["ceilings"].is_null());
  EXPECT_TRUE(report["hardware"]["timer_overhead_ms"].is_null());
  EXPECT_EQ(report["decision"]["verdict"], "dry_run");
  EXPECT_FALSE(report["decision"]["next_action"].get<std::string>().empty());
}

TEST(DryRun, ReportValidatesHasThePlanAndNoTimings) {
  TempFolder folder;
  const auto output = folder / "dry.json";
  const CliResult cli = run_cli("run --dry-run --output '" + output.string() + "'" + kTiny);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const nlohmann::json report = read_json(output);
  EXPECT_EQ(schema_errors(report, "result"), std::vector<std::string>{});
  expect_no_timings(report);
  EXPECT_TRUE(report["failure"].is_null());
  EXPECT_EQ(report["workload"]["sequence_lengths"], nlohmann::json({64, 128}));
  ASSERT_EQ(report["plan"].size(), 4u);  // 2 lengths x (softmax_kv, linear_attention), decode
  for (const auto& cell : report["plan"]) {
    for (const char* key : {"mechanism", "variant", "role", "phase", "sequence_length", "batch", "heads", "head_dim",
                            "dtype", "state_bytes", "predicted_peak_bytes"}) {
      EXPECT_TRUE(cell.contains(key)) << key;
    }
  }
  // Explicit K/V history: 2 (K, V) x L x heads x head_dim x 2 bytes (bfloat16).
  EXPECT_EQ(report["plan"][2]["mechanism"], "softmax_kv");
  EXPECT_EQ(report["plan"][2]["state_bytes"], 2 * 128 * 8 * 64 * 2);
}

// Issue 8, items 5 and 14: a plan whose sizes overflow is refused even as a dry run (it used to plan
// `state_bytes: -2048`); one that is merely larger than this machine's memory is the dry run's job to
// show, while a measuring run refuses it up front.
TEST(DryRun, OverflowingSizesAreRefusedAndOversizedPlansAreShownNotMeasured) {
  TempFolder folder;
  for (const char* lengths : {"4611686018427387904", "9223372036854775807"}) {
    const CliResult huge = run_cli("run --dry-run -q --sequence-lengths " + std::string(lengths) + " --output '" +
                                   (folder / "huge.json").string() + "'");
    EXPECT_EQ(huge.exit_code, 2) << huge.err;
    EXPECT_NE(huge.err.find("exceed what any machine can address"), std::string::npos) << huge.err;
  }
  EXPECT_FALSE(std::filesystem::exists(folder / "huge.json"));

  const auto output = folder / "big.json";
  const CliResult big = run_cli("run --dry-run -q --sequence-lengths 1000000000 --output '" + output.string() + "'");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  const nlohmann::json report = read_json(output);
  EXPECT_EQ(report["plan"][0]["state_bytes"], std::int64_t{2} * 1000000000 * 8 * 64 * 2);
  const CliResult measured = run_cli("run -q --sequence-lengths 1000000000 --output '" + (folder / "m.json").string() + "'");
  EXPECT_EQ(measured.exit_code, 2);
  EXPECT_NE(measured.err.find("--dry-run"), std::string::npos) << measured.err;
  EXPECT_FALSE(std::filesystem::exists(folder / "m.json"));
}

TEST(DryRun, PreflightJsonPathIsCheckedLikeEveryOutput) {
  TempFolder folder;
  const CliResult result = run_cli("preflight --profile ARCH-CPU-MECHANISM --sequence-lengths 64 --json '" +
                                   (folder / "newdir/").string() + "'");
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--json"), std::string::npos) << result.err;
  EXPECT_TRUE(std::filesystem::is_empty(folder.path()));
}

TEST(DryRun, PlanJsonCarriesEachCellsPredictedBytes) {
  Workload workload;
  workload.sequence_lengths = {512, 8192};
  const Plan plan = build_plan(*find_mode("linear_recurrence"), workload, "cpu");
  const nlohmann::json cells = plan_to_json(plan);
  ASSERT_EQ(cells.size(), plan.cells.size());
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    EXPECT_EQ(cells[i]["state_bytes"], plan.cells[i].state_bytes);
    EXPECT_EQ(cells[i]["predicted_peak_bytes"], plan.cells[i].predicted_peak_bytes);
    EXPECT_EQ(cells[i]["role"], i % 2 == 0 ? "baseline" : "candidate");
  }
  // The seed's reference figures: history 1 MiB at L=512, 16 MiB at L=8192; recurrent state fixed.
  EXPECT_EQ(cells[0]["state_bytes"], 1 << 20);
  EXPECT_EQ(cells[2]["state_bytes"], 16 << 20);
  EXPECT_EQ(cells[1]["state_bytes"], cells[3]["state_bytes"]);
}

TEST(DryRun, FailedProfilePreflightWritesOnlyADryRunAndExitsOne) {
  if (probe_cuda().usable) GTEST_SKIP() << "a usable CUDA device is present";
  TempFolder folder;
  const auto output = folder / "cuda.json";
  const CliResult cli = run_cli("run --profile ARCH-CUDA-MECHANISM --output '" + output.string() + "'" + kTiny);
  EXPECT_EQ(cli.exit_code, 1) << cli.err;
  EXPECT_NE(cli.err.find("preflight of profile ARCH-CUDA-MECHANISM failed"), std::string::npos) << cli.err;
  if (!std::filesystem::exists(output)) return;  // writing nothing would also honour the contract
  const nlohmann::json report = read_json(output);
  EXPECT_EQ(schema_errors(report, "result"), std::vector<std::string>{});
  expect_no_timings(report);
  EXPECT_EQ(report["identity"]["profile_id"], "ARCH-CUDA-MECHANISM");
  EXPECT_EQ(report["failure"]["kind"], "preflight_failed");
  const nlohmann::json& checks = report["failure"]["checks"];
  ASSERT_FALSE(checks.empty());
  for (const auto& check : checks) EXPECT_EQ(check["status"], "fail");
  EXPECT_EQ(checks[0]["id"], "backend");
  EXPECT_NE(checks[0]["message"].get<std::string>().find("no usable CUDA device"), std::string::npos);
  EXPECT_EQ(report["profile"]["preflight"]["passed"], false);
  EXPECT_EQ(report["plan"].size(), 4u);
}

TEST(DryRun, DryRunUnderAPassingProfileRecordsItsSettings) {
  TempFolder folder;
  const auto output = folder / "cpu.json";
  const CliResult cli = run_cli("run --dry-run --profile ARCH-CPU-MECHANISM --output '" + output.string() + "'" +
                                " --sequence-lengths 64 --quiet");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const nlohmann::json report = read_json(output);
  EXPECT_EQ(schema_errors(report, "result"), std::vector<std::string>{});
  expect_no_timings(report);
  EXPECT_EQ(report["settings_sources"]["repeats"], "profile");
  EXPECT_EQ(report["workload"]["repeats"], 100);
  EXPECT_EQ(report["profile"]["preflight"]["passed"], true);
}

}  // namespace
}  // namespace arch_bench::testing
