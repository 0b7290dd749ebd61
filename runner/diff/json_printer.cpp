// The diff as a JSON document for tools (schemas/diff.schema.json).
#include "runner/diff/printers.hpp"

namespace arch_bench {

namespace {
using nlohmann::json;

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }
json optional_string(const std::optional<std::string>& value) { return value ? json(*value) : json(nullptr); }

json side_json(const ReportSide& side) {
  return {{"file", side.file},
          {"schema_version", side.schema_version},
          {"workload_id", side.workload_id},
          {"run_label", side.run_label},
          {"mode", side.mode},
          {"created_at", side.created_at},
          {"git_commit", side.git_commit},
          {"evidence_level", side.evidence_level},
          {"decision_verdict", side.decision_verdict},
          {"hardware", side.hardware},
          {"failure", side.failure.empty() ? json(nullptr) : json(side.failure)}};
}

json allowed_json(const AllowedDifference& difference) {
  return {{"field", difference.field},
          {"old", difference.old_value},
          {"new", difference.new_value},
          {"message", difference.message},
          {"allowed_by", difference.allowed_by}};
}

json change_json(const StructuralChange& change) {
  return {{"field", change.field},
          {"old", change.old_value},
          {"new", change.new_value},
          {"kind", change_kind_name(change.kind)},
          {"message", change.message}};
}

json key_json(const RowKey& key) {
  return {{"mechanism", key.mechanism},
          {"variant", key.variant},
          {"phase", key.phase},
          {"sequence_length", key.sequence_length},
          {"batch", key.batch},
          {"heads", key.heads},
          {"head_dim", key.head_dim},
          {"dtype", key.dtype},
          {"options", key.options},
          {"occurrence", key.occurrence}};
}

json row_json(const RowDiff& row) {
  json structural = json::array();
  for (const StructuralChange& change : row.structural) structural.push_back(change_json(change));
  const bool paired = row.verdict != Verdict::added && row.verdict != Verdict::removed;
  return {{"key", key_json(row.key)},
          {"label", row.label},
          {"verdict", verdict_name(row.verdict)},
          {"reason", row.reason},
          {"old_status", optional_string(row.old_status)},
          {"new_status", optional_string(row.new_status)},
          {"old_samples", paired ? json(row.timing.old_samples) : json(nullptr)},
          {"new_samples", paired ? json(row.timing.new_samples) : json(nullptr)},
          {"old_median_ms", optional_number(row.timing.old_median_ms)},
          {"new_median_ms", optional_number(row.timing.new_median_ms)},
          {"change", optional_number(row.timing.change)},
          {"p_value", optional_number(row.timing.p_value)},
          {"structural", structural}};
}
}  // namespace

json diff_to_json(const DiffResult& diff) {
  json rows = json::array();
  for (const RowDiff& row : diff.rows) rows.push_back(row_json(row));
  json report_changes = json::array();
  for (const StructuralChange& change : diff.report_changes) report_changes.push_back(change_json(change));
  json verdicts = json::object();
  for (const auto& [verdict, count] : diff.summary.verdicts) verdicts[verdict_name(verdict)] = count;
  json allowed = json::array();
  for (const AllowedDifference& difference : diff.allowed_differences) allowed.push_back(allowed_json(difference));
  const DiffSettings& s = diff.settings;
  // Keys are written sorted, so allowed_differences comes first: read top-down, it precedes every verdict.
  return {{"schema_version", kDiffSchemaVersion},
          {"tool", "arch-bench"},
          {"allowed_differences", allowed},
          {"old", side_json(diff.old_report)},
          {"new", side_json(diff.new_report)},
          {"settings",
           {{"test", "mann_whitney_u_two_sided_normal_approximation_tie_and_continuity_corrected"},
            {"alpha", s.timing.alpha},
            {"min_effect", s.timing.min_effect},
            {"min_samples", s.timing.min_samples},
            {"peak_memory_tolerance_fraction", s.memory.fraction},
            {"peak_memory_tolerance_bytes", s.memory.bytes},
            {"fail_on", s.fail_on_slower ? "regression" : "never"},
            {"allow_workload_change", s.allow_workload_change},
            {"allow_mode_change", s.allow_mode_change},
            {"allow_hardware_change", s.allow_hardware_change},
            {"allow_removed", s.allow_removed},
            {"allow_failure", s.allow_failure},
            {"allow_evidence_drop", s.allow_evidence_drop}}},
          {"notes", diff.notes},
          {"rows", rows},
          {"report_changes", report_changes},
          {"summary",
           {{"verdicts", verdicts},
            {"structural_regressions", diff.summary.structural_regressions},
            {"structural_improvements", diff.summary.structural_improvements},
            {"structural_neutral", diff.summary.structural_neutral},
            {"geomean_ratio", optional_number(diff.summary.geomean_ratio)},
            {"geomean_rows", diff.summary.geomean_rows},
            {"failing", diff.summary.failing},
            {"relaxed", diff.summary.relaxed},
            {"regression", diff.summary.exit_code != 0},
            {"exit_code", diff.summary.exit_code}}}};
}

}  // namespace arch_bench
