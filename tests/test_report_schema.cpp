// Reports validate against schemas/result.schema.json; broken ones do not; files are written
// atomically and never overwritten.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "runner/measure/ceilings.hpp"
#include "runner/modes/mode.hpp"
#include "runner/report/atomic_write.hpp"
#include "runner/report/report.hpp"
#include "runner/report/schema_validation.hpp"
#include "support/cli.hpp"
#include "support/report_rows.hpp"

namespace arch_bench {
namespace {

RunReport sample_report() {
  RunReport report;
  report.identity = {"ARCH-RECURRENT-STATE-MECHANISM", "arch-linear-recurrence-v2", "unit", "ARCH-CPU-MECHANISM",
                     "linear_recurrence", "2026-11-29T00:00:00Z", "arch-bench run", 0};
  report.workload.sequence_lengths = {512};
  const Mode* mode = find_mode("linear_recurrence");
  report.arms = mode->arms(report.workload);
  report.ceilings = Ceilings{10, 12, 50, 2, "test", {}, {}, {}};
  report.timer_overhead_ms = 2e-5;
  report.rows.push_back(testing::softmax_kv_baseline_row(Phase::decode));
  report.decision.verdict = "inconclusive";
  report.decision.next_action = "measure more lengths";
  return report;
}

TEST(ReportSchema, WrittenReportValidates) {
  const nlohmann::json document = to_json(sample_report());
  const std::vector<std::string> errors = schema_errors(document, "result");
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front());
  for (const char* key : {"schema_version", "identity", "workload", "hardware", "baseline", "candidates", "metrics",
                          "evidence_level", "failure", "decision"}) {
    EXPECT_TRUE(document.contains(key)) << key;
  }
}

TEST(ReportSchema, MissingRequiredFieldIsRejected) {
  for (const char* key : {"decision", "metrics", "identity", "evidence_level"}) {
    nlohmann::json document = to_json(sample_report());
    document.erase(key);
    EXPECT_FALSE(schema_errors(document, "result").empty()) << key;
  }
  nlohmann::json document = to_json(sample_report());
  document["metrics"]["rows"][0].erase("state_bytes");
  EXPECT_FALSE(schema_errors(document, "result").empty());
}

TEST(ReportSchema, WrongTypesAndUnknownEnumsAreRejected) {
  nlohmann::json document = to_json(sample_report());
  document["metrics"]["rows"][0]["dtype"] = "float16";
  EXPECT_FALSE(schema_errors(document, "result").empty());
  document = to_json(sample_report());
  document["evidence_level"] = "gpu_guessed";
  EXPECT_FALSE(schema_errors(document, "result").empty());
  document = to_json(sample_report());
  document["metrics"]["rows"][0]["state_bytes"] = "1MiB";
  EXPECT_FALSE(schema_errors(document, "result").empty());
}

TEST(ReportSchema, NonFiniteErrorsSerialiseAsNullAndStillValidate) {
  RunReport report = sample_report();
  report.rows[0].accuracy.output_finite = false;
  report.rows[0].accuracy.max_abs_error = INFINITY;
  report.rows[0].accuracy.max_rel_error = NAN;
  const nlohmann::json document = to_json(report);
  EXPECT_TRUE(document["metrics"]["rows"][0]["max_rel_error"].is_null());
  EXPECT_TRUE(schema_errors(document, "result").empty());
}

TEST(ReportSchema, CeilingReadingsBeforeAndAfterTheCellsAreWrittenAndValidate) {
  RunReport report = sample_report();
  report.ceilings =
      with_second_reading(Ceilings{10, 12, 25, 2, "test", {}, {}, {}}, Ceilings{9, 13, 50, 2, "test", {}, {}, {}});
  nlohmann::json document = to_json(report);
  const nlohmann::json& ceilings = document["hardware"]["ceilings"];
  EXPECT_DOUBLE_EQ(ceilings["peak_gflops"].get<double>(), 50.0);
  ASSERT_EQ(ceilings["readings"].size(), 2u);
  EXPECT_EQ(ceilings["readings"][0]["when"], "before_cells");
  EXPECT_DOUBLE_EQ(ceilings["readings"][0]["peak_gflops"].get<double>(), 25.0);
  EXPECT_EQ(ceilings["readings"][1]["when"], "after_cells");
  const std::vector<std::string> errors = schema_errors(document, "result");
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front());
  EXPECT_FALSE(to_json(sample_report())["hardware"]["ceilings"].contains("readings"));  // one reading

  document["hardware"]["ceilings"]["readings"][1]["when"] = "during_cells";
  EXPECT_FALSE(schema_errors(document, "result").empty());
  document["hardware"]["ceilings"]["readings"].erase(1);
  EXPECT_FALSE(schema_errors(document, "result").empty());
}

TEST(AtomicWrite, WritesOnceAndNeverOverwritesWithoutBeingAsked) {
  testing::TempFolder folder;
  const auto path = folder / "nested" / "report.json";
  write_file_atomically(path, "first\n", false);
  EXPECT_EQ(testing::read_text(path), "first\n");
  EXPECT_THROW(write_file_atomically(path, "second\n", false), UsageError);
  EXPECT_EQ(testing::read_text(path), "first\n");
  EXPECT_THROW(check_output_path(path, false, "pick another label"), UsageError);
  write_file_atomically(path, "third\n", true);
  EXPECT_EQ(testing::read_text(path), "third\n");
  // No temporary files are left behind.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(path.parent_path())) ++entries;
  EXPECT_EQ(entries, 1u);
}

}  // namespace
}  // namespace arch_bench
