// A result report as CSV: one line per row (cell), the report's identity repeated on each line so
// that files of several runs can be concatenated and grouped. Missing or null values are empty
// fields; numbers keep full precision (the shortest text that reads back as the same double). Text
// that a spreadsheet would run as a formula is neutralised (see starts_a_formula).
#include <algorithm>
#include <charconv>
#include <iterator>
#include <set>
#include <string>
#include <vector>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runner/present/exporters.hpp"
#include "runner/present/number_text.hpp"

namespace arch_bench {

namespace {
using nlohmann::json;

// Identity columns, then the row's own fields in the order a reader scans them.
constexpr const char* kIdentityColumns[] = {"run_label", "workload_id", "mode", "backend"};
constexpr const char* kRowColumns[] = {
    "mechanism", "variant", "role", "state_kind", "phase", "sequence_length", "batch", "heads", "head_dim", "dtype",
    "options", "status", "reason", "failure_kind", "repeats", "warmup", "steps_per_sample", "median_step_ms",
    "mean_step_ms", "p05_step_ms", "p95_step_ms", "min_step_ms", "max_step_ms", "stdev_step_ms", "rel_stdev",
    "state_bytes", "peak_memory_bytes", "predicted_peak_bytes", "predicted_process_bytes", "output_finite", "max_abs_error", "max_rel_error",
    "tolerance", "within_tolerance", "approx_rel_l2_vs_softmax", "bytes_moved", "flops", "achieved_gbps",
    "achieved_gflops", "fraction_of_memory_bandwidth", "fraction_of_peak_flops", "timing_method",
    "launch_overhead_ms"};

// A spreadsheet runs a cell that starts with = + - @ (and, after its own trimming, tab or CR) as a
// formula: a workload id `+cmd|' /C calc'!A0` or a variant `=HYPERLINK("http://evil","x")` would
// execute when the file is opened. As OWASP's CSV-injection guidance says, such a cell gets a
// leading single quote (the spreadsheet then shows it as text) and is quoted. A negative number
// (`-0.5`, `-1e-05`) is a number, not a formula, and stays as it is, so columns stay numeric.
bool starts_a_formula(const std::string& text) {
  if (text.empty()) return false;
  switch (text.front()) {
    case '=': case '+': case '@': case '\t': case '\r': return true;
    case '-': {
      double number = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
      return error != std::errc() || end != text.data() + text.size();
    }
    default: return false;
  }
}

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled; a neutralised
// formula always is.
std::string field(const std::string& text) {
  const bool formula = starts_a_formula(text);
  if (!formula && text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = formula ? "\"'" : "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string value_text(const json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return fmt::format("{}", value.get<std::int64_t>());
  if (value.is_number_unsigned()) return fmt::format("{}", value.get<std::uint64_t>());
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());
  return value.dump();  // options: compact JSON in one field
}

// The columns: the identity, the row fields above in that order, then every other field any row carries
// that is not a list (samples_ms), by name, so that a field a newer report adds (or one a backend adds,
// such as the CPU's team checks) is never lost on the way to a spreadsheet.
std::vector<std::string> row_columns(const json& rows) {
  std::vector<std::string> columns(std::begin(kRowColumns), std::end(kRowColumns));
  std::set<std::string> extra;
  for (const json& row : rows) {
    for (const auto& [key, value] : row.items()) {
      if (!value.is_array() && std::find(columns.begin(), columns.end(), key) == columns.end()) extra.insert(key);
    }
  }
  columns.insert(columns.end(), extra.begin(), extra.end());
  return columns;
}

std::string lookup(const json& object, const std::string& key) {
  const auto found = object.find(key);
  return found == object.end() ? std::string() : value_text(*found);
}
}  // namespace

std::string export_csv(const LoadedReport& report) {
  const json& document = report.document;
  const std::string identity[] = {present_text::text(document["identity"], "run_label"),
                                  present_text::text(document["identity"], "workload_id"),
                                  present_text::text(document["identity"], "mode"),
                                  present_text::text(document["hardware"], "backend")};
  std::string out;
  bool first = true;
  for (const char* column : kIdentityColumns) out += (first ? "" : ",") + std::string(column), first = false;
  const json& rows = document["metrics"]["rows"];
  const std::vector<std::string> columns = row_columns(rows);
  for (const std::string& column : columns) out += "," + field(column);
  out += "\n";
  for (const json& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < std::size(identity); ++i) line += (i == 0 ? "" : ",") + field(identity[i]);
    for (const std::string& column : columns) line += "," + field(lookup(row, column));
    out += line + "\n";
  }
  return out;
}

}  // namespace arch_bench
