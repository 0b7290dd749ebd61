// The run pipeline without the executable (runner/pipeline/run_pipeline.hpp and its steps): the
// backend choice, the report path and up-front checks, the decision of a failed or interrupted run,
// the fallback write, and a whole dry run and a tiny measured run from a RunRequest.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backends/cpu/usable_cpus.hpp"
#include "core/errors.hpp"
#include "runner/modes/mode.hpp"
#include "runner/pipeline/assemble_report.hpp"
#include "runner/pipeline/check_resources.hpp"
#include "runner/preflight/memory_room.hpp"
#include "runner/pipeline/choose_backend.hpp"
#include "runner/pipeline/decide_run.hpp"
#include "runner/pipeline/report_path.hpp"
#include "runner/pipeline/run_pipeline.hpp"
#include "runner/pipeline/write_report.hpp"
#include "runner/preflight/machine_facts.hpp"
#include "runner/report/schema_validation.hpp"
#include "support/cli.hpp"

namespace arch_bench {
namespace {

using testing::read_json;
using testing::read_text;
using testing::TempFolder;

const Mode& mode_named(const std::string& id) {
  const Mode* mode = find_mode(id);
  EXPECT_NE(mode, nullptr) << id;
  return *mode;
}

// A request as the CLI would make it for `run --mode linear_recurrence` with a tiny matrix, writing
// into `folder`.
RunRequest tiny_request(const std::filesystem::path& folder) {
  RunRequest request;
  request.mode = &mode_named("linear_recurrence");
  const ModeDefaults defaults = request.mode->defaults();
  request.workload = defaults.workload;
  request.workload.sequence_lengths = {16};
  request.workload.warmup = 1;
  request.workload.repeats = 3;
  request.workload.threads = 1;
  request.backend = {"cpu", {}};
  request.semantic_id = defaults.semantic_id;
  request.workload_id = defaults.workload_id;
  request.run_label = "pipeline-test";
  request.profile_id = "ARCH-CPU-MECHANISM";
  request.command_line = "run --mode linear_recurrence";
  request.output.results_dir = folder.string();
  request.omp_wait_policy = "unset";
  return request;
}

void write_text(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

ProgressSink collect(std::vector<std::string>& lines) {
  return [&lines](const std::string& line, bool transient) {
    if (!transient) lines.push_back(line);
  };
}

TEST(ChooseBackend, CpuIsTakenAsAskedWithoutAProbe) {
  const Mode& mode = mode_named("linear_recurrence");
  const BackendChoice choice = choose_backend("cpu", mode, mode.defaults().workload);
  EXPECT_EQ(choice.name, "cpu");
  EXPECT_TRUE(choice.notes.empty());
}

TEST(ChooseBackend, CudaWithoutAUsableDeviceIsABadInputNamingTheProbesReason) {
  const Mode& mode = mode_named("linear_recurrence");
  CudaProbe probe;
  probe.reason = "no driver here";
  try {
    choose_backend("cuda", mode, mode.defaults().workload, probe);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("--device cuda: no usable CUDA device (no driver here)"),
              std::string::npos)
        << error.what();
  }
}

TEST(ChooseBackend, AutoFallsBackToTheCpuWithANoteSayingWhy) {
  const Mode& mode = mode_named("linear_recurrence");
  CudaProbe probe;
  probe.reason = "no driver here";
  const BackendChoice choice = choose_backend("auto", mode, mode.defaults().workload, probe);
  EXPECT_EQ(choice.name, "cpu");
  ASSERT_EQ(choice.notes.size(), 1u);
  EXPECT_NE(choice.notes[0].find("no usable CUDA device (no driver here)"), std::string::npos) << choice.notes[0];
}

TEST(ChooseBackend, AutoTakesAUsableGpuOnlyWhenEveryMechanismHasCudaKernels) {
  CudaProbe probe;
  probe.usable = true;
  probe.devices = nlohmann::json::array({{{"name", "Test GPU"}}});
  for (const auto& mode : all_modes()) {
    const Workload workload = mode->defaults().workload;
    const std::vector<std::string> missing = mechanisms_without(*mode, workload, "cuda");
    const BackendChoice choice = choose_backend("auto", *mode, workload, probe);
    ASSERT_EQ(choice.notes.size(), 1u) << mode->id();
    if (missing.empty()) {
      EXPECT_EQ(choice.name, "cuda") << mode->id();
      EXPECT_EQ(choice.notes[0], "--device auto: measured on CUDA device 0 (Test GPU)");
      EXPECT_EQ(choose_backend("cuda", *mode, workload, probe).name, "cuda");
    } else {
      EXPECT_EQ(choice.name, "cpu") << mode->id();
      EXPECT_NE(choice.notes[0].find(missing[0]), std::string::npos) << choice.notes[0];
      EXPECT_THROW(choose_backend("cuda", *mode, workload, probe), UsageError) << mode->id();
    }
  }
}

TEST(ReportPath, RunLabelsNameAFileAndNothingElse) {
  EXPECT_NO_THROW(check_run_label("nightly-2.run_1"));
  EXPECT_THROW(check_run_label(""), UsageError);
  EXPECT_THROW(check_run_label("a/b"), UsageError);
  EXPECT_THROW(check_run_label("a b"), UsageError);
  EXPECT_NO_THROW(check_run_label(std::string(kMaxRunLabel, 'x')));
  EXPECT_THROW(check_run_label(std::string(kMaxRunLabel + 1, 'x')), UsageError);
}

TEST(ReportPath, DefaultsToExperimentAndLabelInTheResultsFolder) {
  TempFolder folder;
  OutputRequest request;
  request.results_dir = folder.path().string();
  EXPECT_EQ(checked_report_path(request, "45_exp", "lab"), folder / "45_exp_lab.json");
  request.output = (folder / "mine.json").string();
  request.output_given = true;
  EXPECT_EQ(checked_report_path(request, "45_exp", "lab"), folder / "mine.json");
}

TEST(ReportPath, EmptyOptionsAndExistingFilesAreRefused) {
  TempFolder folder;
  OutputRequest request;
  request.results_dir = folder.path().string();
  request.output_given = true;  // --output ''
  EXPECT_THROW(checked_report_path(request, "e", "l"), UsageError);
  request = OutputRequest{};
  request.results_dir_given = true;  // --results-dir ''
  request.results_dir.clear();
  EXPECT_THROW(checked_report_path(request, "e", "l"), UsageError);

  request = OutputRequest{};
  request.output = (folder / "taken.json").string();
  write_text(folder / "taken.json", "{}");
  EXPECT_THROW(checked_report_path(request, "e", "l"), UsageError);
  request.overwrite = true;
  EXPECT_EQ(checked_report_path(request, "e", "l"), folder / "taken.json");
}

TEST(CheckResources, ACellLargerThanTheAvailableMemoryIsRefusedBeforeMeasuring) {
  if (!read_memory_room().tightest()) GTEST_SKIP() << "neither MemAvailable nor a cgroup limit on this machine";
  TempFolder folder;
  const Mode& mode = mode_named("linear_recurrence");
  Workload workload = mode.defaults().workload;
  workload.sequence_lengths = {16};
  Plan plan = build_plan(mode, workload, "cpu");
  ASSERT_FALSE(plan.cells.empty());
  EXPECT_NO_THROW(check_resources(plan, workload, "cpu", folder / "r.json"));
  // The process's share, not the buffers alone, is what must fit (issue 42, item 6).
  plan.cells.back().predicted_process_bytes = std::int64_t{1} << 60;
  try {
    check_resources(plan, workload, "cpu", folder / "r.json");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find(read_memory_room().tightest()->source), std::string::npos) << error.what();
  }
}

Row row_with(RowStatus status, const std::string& kind, const std::string& reason) {
  Row row;
  row.cell.mechanism = "m";
  row.status = status;
  row.failure_kind = kind;
  row.reason = reason;
  return row;
}

TEST(DecideRun, TheFirstFailedRowIsTheReportsFailure) {
  EXPECT_FALSE(first_row_failure(std::vector<Row>{row_with(RowStatus::ok, "", "")}));
  const std::vector<Row> rows{row_with(RowStatus::skipped, "", "too long"),
                              row_with(RowStatus::failed, "", "threw"),
                              row_with(RowStatus::failed, "out_of_memory", "later")};
  const std::optional<Failure> failure = first_row_failure(rows);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, "mechanism_error");
  EXPECT_EQ(failure->message, "threw");
}

TEST(DecideRun, AnInterruptedRunDecidesNothingAndNamesTheCellCutShort) {
  RunReport report;
  report.rows = {row_with(RowStatus::ok, "", ""), row_with(RowStatus::failed, "interrupted", "stopped")};
  report.rows.back().cell.sequence_length = 128;
  report.decision.verdict = "candidate_wins";
  report.decision.crossover_length = 512;
  mark_interrupted(report, 5, SIGINT);
  ASSERT_TRUE(report.failure);
  EXPECT_EQ(report.failure->kind, "interrupted");
  EXPECT_EQ(report.failure->message,
            "interrupted by SIGINT after 2 of 5 cells; the rows measured so far are kept and the cells not measured "
            "are absent");
  ASSERT_TRUE(report.failure->cell);
  EXPECT_EQ(report.failure->cell->sequence_length, 128);
  EXPECT_EQ(report.decision.verdict, "inconclusive");
  EXPECT_FALSE(report.decision.crossover_length);
  EXPECT_EQ(report.decision.reasons.front(), report.failure->message);
}

// Interrupted in the ceilings phase, before any cell: the mode's rule over no rows found every
// property unshown and the report gave "linear_attention state bytes change with sequence length in
// decode" and the like as reasons, for rows that do not exist.
TEST(DecideRun, InterruptedBeforeTheFirstCellSaysSoAndNothingElse) {
  for (const char* id : {"linear_recurrence", "mamba_scan", "performer", "landscape"}) {
    const Mode& mode = mode_named(id);
    RunReport report;
    report.workload = mode.defaults().workload;
    decide_run(report, mode, 6, nullptr, nullptr, SIGTERM);
    const std::string expected =
        "interrupted by SIGTERM before the first cell (0 of 6 cells measured); the report holds no rows";
    EXPECT_EQ(report.decision.reasons, std::vector<std::string>{expected}) << id;
    EXPECT_EQ(report.decision.verdict, "inconclusive") << id;
    EXPECT_TRUE(report.decision.details.empty()) << id << ": " << report.decision.details.dump();
    EXPECT_FALSE(report.decision.crossover_length) << id;
    ASSERT_TRUE(report.failure) << id;
    EXPECT_EQ(report.failure->kind, "interrupted");
    EXPECT_EQ(report.failure->message, expected);
    EXPECT_FALSE(report.failure->cell);
  }
}

TEST(DecideRun, ADryRunWithoutAProfileDecidesFromThePlanAlone) {
  const Mode& mode = mode_named("linear_recurrence");
  Workload workload = mode.defaults().workload;
  workload.sequence_lengths = {16};
  RunReport report;
  report.identity.profile_id = "ARCH-CPU-MECHANISM";
  decide_dry_run(report, build_plan(mode, workload, "cpu"), nullptr);
  EXPECT_EQ(report.evidence_level, "dry_run");
  EXPECT_EQ(report.decision.verdict, "dry_run");
  EXPECT_FALSE(report.failure);
  EXPECT_TRUE(report.host.is_object());
}

// Restores TMPDIR when the test ends.
class TmpdirOverride {
 public:
  explicit TmpdirOverride(const std::filesystem::path& folder) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    ::setenv("TMPDIR", folder.c_str(), 1);
  }
  TmpdirOverride(const TmpdirOverride&) = delete;
  TmpdirOverride& operator=(const TmpdirOverride&) = delete;
  ~TmpdirOverride() {
    if (old_) ::setenv("TMPDIR", old_->c_str(), 1);
    else ::unsetenv("TMPDIR");
  }

 private:
  std::optional<std::string> old_;
};

TEST(WriteReport, AFailedWriteKeepsTheMeasurementInAFallbackFile) {
  TempFolder folder;
  const std::filesystem::path output = folder / "report.json";
  EXPECT_EQ(write_with_fallback("{}\n", output, false), output);
  EXPECT_EQ(read_text(output), "{}\n");

  TempFolder fallback;
  const TmpdirOverride tmpdir(fallback.path());
  // The name is taken now (no --overwrite): the report goes to $TMPDIR under the same name.
  EXPECT_EQ(write_with_fallback("{\"a\": 1}\n", output, false), fallback / "report.json");
  EXPECT_EQ(read_text(fallback / "report.json"), "{\"a\": 1}\n");
  EXPECT_EQ(write_with_fallback("{\"a\": 2}\n", output, false), fallback / "report.1.json");
  EXPECT_EQ(read_text(output), "{}\n");
}

TEST(AssembleReport, TheReportBeginsWithTheRequestsIdentityAndTheNotesAReaderNeeds) {
  TempFolder folder;
  RunRequest request = tiny_request(folder.path());
  request.backend.notes = {"backend note"};
  request.workload.threads = usable_cpus() + 1;
  request.profile_id = "ARCH-CUDA-LABEL";
  const RunReport report = begin_report(request);
  EXPECT_EQ(report.identity.semantic_id, request.semantic_id);
  EXPECT_EQ(report.identity.run_label, "pipeline-test");
  EXPECT_EQ(report.identity.mode, "linear_recurrence");
  EXPECT_EQ(report.identity.command_line, request.command_line);
  EXPECT_FALSE(report.identity.created_at.empty());
  EXPECT_EQ(report.backend, "cpu");
  EXPECT_FALSE(report.arms.empty());
  ASSERT_EQ(report.notes.size(), 3u);
  EXPECT_EQ(report.notes[0], "backend note");
  EXPECT_NE(report.notes[1].find("is more than the"), std::string::npos) << report.notes[1];
  EXPECT_NE(report.notes[2].find("profile ARCH-CUDA-LABEL is recorded as asked"), std::string::npos)
      << report.notes[2];
}

TEST(RunPipeline, ADryRunWritesAValidPlanOnlyReport) {
  TempFolder folder;
  RunRequest request = tiny_request(folder.path());
  request.dry_run = true;
  PreparedRun prepared = prepare_run(request);
  EXPECT_EQ(prepared.output, folder / "45_linear_recurrent_state_pipeline-test.json");
  EXPECT_FALSE(prepared.measures(request));
  std::vector<std::string> lines;
  const RunOutcome outcome = finish_run(request, std::move(prepared), collect(lines));
  EXPECT_FALSE(outcome.measured);
  EXPECT_TRUE(lines.empty());
  EXPECT_EQ(outcome.schema_errors, std::vector<std::string>{});
  EXPECT_EQ(outcome.written, outcome.output);
  const nlohmann::json document = read_json(outcome.output);
  EXPECT_EQ(document["evidence_level"], "dry_run");
  EXPECT_EQ(document["plan"].size(), outcome.plan.cells.size());
  EXPECT_EQ(document["workload"]["omp_wait_policy"], "unset");
  EXPECT_TRUE(document["metrics"]["rows"].empty());
}

TEST(RunPipeline, AnExistingReportIsRefusedBeforeAnythingIsMeasured) {
  TempFolder folder;
  RunRequest request = tiny_request(folder.path());
  write_text(folder / "45_linear_recurrent_state_pipeline-test.json", "{}");
  EXPECT_THROW(prepare_run(request), UsageError);
}

TEST(RunPipeline, ATinyRunMeasuresDecidesAndWritesAValidReport) {
  TempFolder folder;
  const RunRequest request = tiny_request(folder.path());
  PreparedRun prepared = prepare_run(request);
  ASSERT_TRUE(prepared.measures(request));
  std::vector<std::string> lines;
  const RunOutcome outcome = finish_run(request, std::move(prepared), collect(lines));
  EXPECT_TRUE(outcome.measured);
  EXPECT_EQ(outcome.stop_signal, 0);
  EXPECT_EQ(outcome.schema_errors, std::vector<std::string>{});
  EXPECT_EQ(outcome.written, outcome.output);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front().rfind("arch-bench run --mode linear_recurrence: ", 0), 0u) << lines.front();
  EXPECT_EQ(outcome.report.rows.size(), outcome.plan.cells.size());
  EXPECT_FALSE(outcome.report.decision.verdict.empty());
  const nlohmann::json document = read_json(outcome.output);
  EXPECT_EQ(schema_errors(document, "result"), std::vector<std::string>{});
  EXPECT_EQ(document["evidence_level"], "cpu_measured");
  EXPECT_EQ(document["metrics"]["rows"].size(), outcome.plan.cells.size());
}

}  // namespace
}  // namespace arch_bench
