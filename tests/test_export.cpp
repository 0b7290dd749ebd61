// `arch-bench export`: the Google Benchmark JSON and the CSV of a committed result report, checked
// against the report itself (every sample, every aggregate, every field round-trips), then through
// the real executable, and where Debian's packages are installed through the formats' real
// consumers: gbench's compare.py (libbenchmark-tools) and pandas (python3-pandas).
#include <cstdlib>
#include <fstream>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runner/diff/load_report.hpp"
#include "runner/present/exporters.hpp"
#include "support/cli.hpp"
#include "support/stored_reports.hpp"
#include "support/cli_refusals.hpp"

namespace arch_bench::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
constexpr const char* kCompareScript = "/usr/share/benchmark/compare.py";

// RFC 4180 reader for the test: fields of every line, quotes undone.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> lines(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      lines.back().push_back(field), field.clear();
    } else if (c == '\n') {
      lines.back().push_back(field), field.clear();
      lines.emplace_back();
    } else {
      field += c;
    }
  }
  if (lines.back().empty()) lines.pop_back();
  return lines;
}

bool python_has(const std::string& modules) {
  const std::string command = "/usr/bin/python3 -c 'import " + modules + "' > /dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

TEST(GbenchExport, EverySampleIsAnIterationRunAndTheAggregatesAreTheReportsStatistics) {
  const LoadedReport report = read_report(kLinearReport);
  const json exported = json::parse(export_gbench(report));
  const json& rows = report.document["metrics"]["rows"];
  EXPECT_EQ(exported["context"]["num_cpus"], report.document["hardware"]["host"]["logical_cores"]);
  EXPECT_EQ(exported["context"]["library_build_type"], "release");
  EXPECT_EQ(exported["context"]["arch_bench"]["run_label"], "cpp-kernels-2core");

  std::size_t expected = 0;
  for (const json& row : rows) expected += row["samples_ms"].size() + 4;  // + mean, median, stddev, cv
  ASSERT_EQ(exported["benchmarks"].size(), expected);

  std::map<std::string, std::vector<const json*>> by_name;
  for (const json& run : exported["benchmarks"]) by_name[run["name"].get<std::string>()].push_back(&run);
  for (const json& row : rows) {
    const std::string name = fmt::format("{}/decode/L:{}/B:1/H:8/D:64/bfloat16", row["mechanism"].get<std::string>(),
                                         row["sequence_length"].get<int>());
    ASSERT_TRUE(by_name.count(name)) << name;
    const auto& runs = by_name[name];
    ASSERT_EQ(runs.size(), row["samples_ms"].size());
    for (std::size_t i = 0; i < runs.size(); ++i) {
      EXPECT_EQ((*runs[i])["run_type"], "iteration");
      EXPECT_EQ((*runs[i])["repetition_index"], i);
      EXPECT_EQ((*runs[i])["time_unit"], "us");
      EXPECT_DOUBLE_EQ((*runs[i])["real_time"].get<double>(), row["samples_ms"][i].get<double>() * 1000);
      EXPECT_EQ((*runs[i])["state_bytes"], row["state_bytes"].get<double>());
    }
    ASSERT_TRUE(by_name.count(name + "_median"));
    const json& median = *by_name[name + "_median"].front();
    EXPECT_EQ(median["run_type"], "aggregate");
    EXPECT_EQ(median["aggregate_name"], "median");
    EXPECT_EQ(median["run_name"], name);
    EXPECT_DOUBLE_EQ(median["real_time"].get<double>(), row["median_step_ms"].get<double>() * 1000);
    const json& cv = *by_name[name + "_cv"].front();
    EXPECT_EQ(cv["aggregate_unit"], "percentage");
    EXPECT_DOUBLE_EQ(cv["real_time"].get<double>(),
                     row["stdev_step_ms"].get<double>() / row["mean_step_ms"].get<double>());
  }
}

TEST(GbenchExport, VariantsGetTheirOwnNamesAndFamilies) {
  const json exported = json::parse(export_gbench(read_report(kPerformerReport)));
  std::set<std::string> iteration_names;
  std::map<std::string, std::set<int>> families;  // family prefix -> family_index seen
  for (const json& run : exported["benchmarks"]) {
    if (run["run_type"] != "iteration") continue;
    const std::string name = run["name"];
    iteration_names.insert(name);
    families[name.substr(0, name.find('/'))].insert(run["family_index"].get<int>());
  }
  // softmax_kv + 4 performer variants, decode and prefill, 3 lengths.
  EXPECT_EQ(iteration_names.size(), 30u);
  EXPECT_TRUE(iteration_names.count("performer[trig_m=256]/prefill/L:8192/B:1/H:8/D:64/bfloat16"));
  EXPECT_EQ(families.size(), 5u);
  for (const auto& [family, indices] : families) EXPECT_EQ(indices.size(), 1u) << family;
}

TEST(GbenchExport, AFailedRowIsAnErroredRun) {
  LoadedReport report = read_report(kLinearReport);
  json& row = report.document["metrics"]["rows"][0];
  row["status"] = "failed";
  row["reason"] = "out of memory";
  row["samples_ms"] = json::array();
  const json exported = json::parse(export_gbench(report));
  const json& first = exported["benchmarks"][0];
  EXPECT_EQ(first["error_occurred"], true);
  EXPECT_NE(first["error_message"].get<std::string>().find("out of memory"), std::string::npos);
}

TEST(CsvExport, OneLinePerRowAndEveryValueReadsBack) {
  const LoadedReport report = read_report(kPerformerReport);
  const auto lines = parse_csv(export_csv(report));
  const json& rows = report.document["metrics"]["rows"];
  ASSERT_EQ(lines.size(), rows.size() + 1);
  const std::vector<std::string>& header = lines.front();
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* name : {"run_label", "mechanism", "variant", "phase", "sequence_length", "median_step_ms",
                           "p05_step_ms", "p95_step_ms", "state_bytes", "peak_memory_bytes", "max_rel_error",
                           "status", "options", "approx_rel_l2_vs_softmax"}) {
    EXPECT_TRUE(column.count(name)) << name;
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto& fields = lines[r + 1];
    ASSERT_EQ(fields.size(), header.size()) << "line " << r + 2;
    EXPECT_EQ(fields[column["run_label"]], "cpp-kernels-2core");
    EXPECT_EQ(fields[column["mechanism"]], rows[r]["mechanism"]);
    EXPECT_EQ(fields[column["variant"]], rows[r]["variant"]);
    // Full precision: the text reads back as the very same double.
    EXPECT_EQ(std::stod(fields[column["median_step_ms"]]), rows[r]["median_step_ms"].get<double>());
    EXPECT_EQ(std::stod(fields[column["max_rel_error"]]), rows[r]["max_rel_error"].get<double>());
    EXPECT_EQ(json::parse(fields[column["options"]]), rows[r]["options"]);
  }
}

// No field of a row is lost on the way to a spreadsheet: every field that is not a list (samples_ms) is
// a column, the ones the export knows nothing of (a newer report's, a backend's own) after the rest,
// by name.
TEST(CsvExport, EveryScalarFieldOfTheRowsIsAColumn) {
  LoadedReport report = read_report(kLinearReport);
  report.document["metrics"]["rows"][0]["a_field_from_a_newer_report"] = 7;
  const auto lines = parse_csv(export_csv(report));
  const std::vector<std::string>& header = lines.front();
  for (const json& row : report.document["metrics"]["rows"]) {
    for (const auto& [key, value] : row.items()) {
      const bool present = std::find(header.begin(), header.end(), key) != header.end();
      EXPECT_EQ(present, !value.is_array()) << key;
    }
  }
  EXPECT_NE(std::find(header.begin(), header.end(), "predicted_process_bytes"), header.end());
  const auto added = std::find(header.begin(), header.end(), "a_field_from_a_newer_report");
  ASSERT_NE(added, header.end());
  EXPECT_GT(added - header.begin(), std::find(header.begin(), header.end(), "launch_overhead_ms") - header.begin());
  EXPECT_EQ(lines[1][added - header.begin()], "7");
  EXPECT_EQ(lines[2][added - header.begin()], "");  // the rows without it: an empty field
}

TEST(CsvExport, QuotesFieldsWithCommasQuotesAndLineBreaks) {
  LoadedReport report = read_report(kLinearReport);
  json& row = report.document["metrics"]["rows"][1];
  row["status"] = "skipped";
  row["reason"] = "needs \"more\" memory,\nsee notes";
  row["median_step_ms"] = nullptr;
  const auto lines = parse_csv(export_csv(report));
  ASSERT_EQ(lines.size(), report.document["metrics"]["rows"].size() + 1);
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < lines[0].size(); ++i) column[lines[0][i]] = i;
  EXPECT_EQ(lines[2][column["reason"]], "needs \"more\" memory,\nsee notes");
  EXPECT_EQ(lines[2][column["median_step_ms"]], "");  // null is an empty field
  EXPECT_EQ(lines[2].size(), lines[0].size());
}

// OWASP CSV injection: a spreadsheet runs a cell that begins with = + - @ tab or CR. Text from the
// report that begins so is written with a leading quote (shown as text) and quoted; a negative number
// stays a number. On the old export the workload id and the variant came out as live formulas.
TEST(CsvExport, FormulasFromTheReportAreNeutralisedAndNegativeNumbersStayNumbers) {
  LoadedReport report = read_report(kLinearReport);
  report.document["identity"]["workload_id"] = "+cmd|' /C calc'!A0";
  json& row = report.document["metrics"]["rows"][0];
  row["variant"] = "=HYPERLINK(\"http://evil\",\"x\")";
  row["status"] = "skipped";
  row["reason"] = "@SUM(A1:A9)";
  row["failure_kind"] = "-2+3+cmd|' /C calc'!A0";
  row["timing_method"] = "\t=1+1";
  row["dtype"] = "\r=1+1";
  row["max_abs_error"] = -0.5;       // a number: stays one
  row["options"] = json::object();
  json& second = report.document["metrics"]["rows"][1];
  second["reason"] = "-1e-05";       // text that is a number is not a formula either
  const std::string csv = export_csv(report);
  const auto lines = parse_csv(csv);
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < lines[0].size(); ++i) column[lines[0][i]] = i;
  const auto& first = lines[1];
  EXPECT_EQ(first[column["workload_id"]], "'+cmd|' /C calc'!A0");
  EXPECT_EQ(first[column["variant"]], "'=HYPERLINK(\"http://evil\",\"x\")");
  EXPECT_EQ(first[column["reason"]], "'@SUM(A1:A9)");
  EXPECT_EQ(first[column["failure_kind"]], "'-2+3+cmd|' /C calc'!A0");
  EXPECT_EQ(first[column["timing_method"]], "'\t=1+1");
  EXPECT_EQ(first[column["dtype"]], "'\r=1+1");
  EXPECT_EQ(first[column["max_abs_error"]], "-0.5");
  EXPECT_EQ(lines[2][column["reason"]], "-1e-05");
  // Written quoted, so the neutralised cell is one field whatever it holds.
  EXPECT_NE(csv.find(",\"'+cmd|' /C calc'!A0\","), std::string::npos) << csv.substr(0, 2000);
  EXPECT_NE(csv.find(",\"'=HYPERLINK(\"\"http://evil\"\",\"\"x\"\")\","), std::string::npos);
  EXPECT_NE(csv.find(",-0.5,"), std::string::npos);
  // No field of the whole file begins a formula.
  for (const auto& fields : lines) {
    for (const std::string& value : fields) {
      if (value.empty()) continue;
      EXPECT_EQ(std::string("=+@\t\r").find(value.front()), std::string::npos) << value;
      if (value.front() == '-') {
        EXPECT_NO_THROW((void)std::stod(value)) << value;
      }
    }
  }
}

// The same as a property: random text in a text column and a random number in a numeric one; the
// field reads back as the text (with the neutralising quote exactly when it starts a formula) and
// the number stays a number.
TEST(CsvExport, AnyTextReadsBackAndNoFieldStartsAFormula) {
  LoadedReport report = read_report(kLinearReport);
  std::mt19937 random(42);
  const std::string alphabet = "=+-@\t\r\n,\"' 0123456789.eE|!abc";
  std::uniform_int_distribution<std::size_t> length(0, 12), pick(0, alphabet.size() - 1);
  std::uniform_real_distribution<double> number(-1e6, 1e6);
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    for (std::size_t n = length(random); n > 0; --n) text += alphabet[pick(random)];
    const double value = number(random);
    json& row = report.document["metrics"]["rows"][0];
    row["variant"] = text;
    row["max_abs_error"] = value;
    const auto lines = parse_csv(export_csv(report));
    std::map<std::string, std::size_t> column;
    for (std::size_t c = 0; c < lines[0].size(); ++c) column[lines[0][c]] = c;
    ASSERT_EQ(lines[1].size(), lines[0].size()) << text;
    const std::string& variant = lines[1][column["variant"]];
    const bool formula = !text.empty() && std::string("=+@\t\r").find(text.front()) != std::string::npos;
    const bool dash = !text.empty() && text.front() == '-';
    if (formula) {
      ASSERT_EQ(variant, "'" + text) << text;
    } else if (!dash) {
      ASSERT_EQ(variant, text);
    } else {
      ASSERT_TRUE(variant == text || variant == "'" + text) << text;
    }
    if (!variant.empty() && variant.front() == '-') {
      ASSERT_NO_THROW((void)std::stod(variant)) << text;
    }
    ASSERT_EQ(std::stod(lines[1][column["max_abs_error"]]), value);
  }
}

TEST(ExportCli, ACsvOfAReportWithFormulasHoldsNoLiveFormula) {
  TempFolder folder;
  const auto hostile = testing::tampered_linear_report(
      folder, [](json& document) { document["identity"]["workload_id"] = "+cmd|' /C calc'!A0"; });
  const auto result = run_cli(fmt::format("export '{}' --format csv", hostile.string()));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.find(",+cmd"), std::string::npos);
  EXPECT_NE(result.out.find(",\"'+cmd|' /C calc'!A0\","), std::string::npos);
}

TEST(ExportCli, WritesOnceAndRefusesToOverwrite) {
  TempFolder folder;
  const auto csv = folder / "out.csv";
  auto result = run_cli(fmt::format("export '{}' --format csv --output '{}'", kLinearReport, csv.string()));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string first = testing::read_text(csv);
  EXPECT_EQ(first, export_csv(read_report(kLinearReport)));
  testing::expect_overwrite_refused(
      fmt::format("export '{}' --format gbench --output '{}'", kLinearReport, csv.string()), csv);
}

TEST(ExportCli, BadInputIsExitTwoAndNamesTheProblem) {
  TempFolder folder;
  auto result = run_cli(fmt::format("export '{}' --format xml", kLinearReport));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--format"), std::string::npos) << result.err;
  result = run_cli(fmt::format("export '{}'", kLinearReport));
  EXPECT_EQ(result.exit_code, 2);
  const auto not_a_report = folder / "not-a-report.json";
  std::ofstream(not_a_report) << R"({"schema_version": "1.0.0", "metrics": {"rows": []}})";
  result = run_cli(fmt::format("export '{}' --format csv", not_a_report.string()));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("not-a-report.json"), std::string::npos) << result.err;
  EXPECT_TRUE(result.out.empty());
}

// The consumer the format exists for: gbench's own compare.py reads the export and compares two runs.
TEST(ExportConsumers, GbenchComparePyReadsTheExport) {
  if (!fs::exists(kCompareScript) || !python_has("scipy, numpy")) {
    GTEST_SKIP() << "skipped: needs " << kCompareScript << " (apt-get install libbenchmark-tools) and "
                 << "python3-scipy for /usr/bin/python3";
  }
  TempFolder folder;
  const auto a = folder / "a.json", out = folder / "compare.txt";
  ASSERT_EQ(run_cli(fmt::format("export '{}' --format gbench --output '{}'", kLinearReport, a.string())).exit_code, 0);
  // The same cells on both sides, so that every benchmark pairs: the export against itself.
  const std::string command = fmt::format("/usr/bin/python3 {} --no-color benchmarks '{}' '{}' > '{}' 2>&1",
                                          kCompareScript, a.string(), a.string(), out.string());
  ASSERT_EQ(std::system(command.c_str()), 0) << testing::read_text(out);
  const std::string text = testing::read_text(out);
  EXPECT_NE(text.find("softmax_kv/decode/L:8192/B:1/H:8/D:64/bfloat16_median"), std::string::npos) << text;
  EXPECT_NE(text.find("U Test"), std::string::npos) << text;  // enough repetitions for its rank test
  EXPECT_NE(text.find("OVERALL_GEOMEAN"), std::string::npos) << text;
}

TEST(ExportConsumers, PandasReadsTheCsv) {
  if (!python_has("pandas")) GTEST_SKIP() << "skipped: python3-pandas is not installed for /usr/bin/python3";
  TempFolder folder;
  const auto csv = folder / "out.csv", script = folder / "check.py";
  ASSERT_EQ(run_cli(fmt::format("export '{}' --format csv --output '{}'", kPerformerReport, csv.string())).exit_code, 0);
  const LoadedReport report = read_report(kPerformerReport);
  const json& rows = report.document["metrics"]["rows"];
  std::ofstream(script) << fmt::format(R"(import sys, pandas
frame = pandas.read_csv(sys.argv[1], float_precision="round_trip")  # its default fast parser is not exact
assert len(frame) == {}, len(frame)
assert frame["median_step_ms"].dtype == "float64"
assert frame["sequence_length"].dtype == "int64"
assert frame["median_step_ms"].iloc[0] == {:.17g}
assert set(frame["phase"]) == {{"decode", "prefill"}}
print(frame.groupby(["mechanism", "variant", "phase"], dropna=False)["median_step_ms"].median().to_string())
)",
                                       rows.size(), rows[0]["median_step_ms"].get<double>());
  const std::string command = "/usr/bin/python3 '" + script.string() + "' '" + csv.string() + "' > '" +
                              (folder / "out.txt").string() + "' 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << testing::read_text(folder / "out.txt");
}

}  // namespace
}  // namespace arch_bench::testing
