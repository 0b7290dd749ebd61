#include "runner/diff/cell_format.hpp"

#include <cmath>

#include <fmt/format.h>

namespace arch_bench::diff_format {

std::string milliseconds(const std::optional<double>& ms) {
  if (!ms) return "-";
  return std::abs(*ms) >= 1e4 ? fmt::format("{:.0f}", *ms) : fmt::format("{:.4g}", *ms);
}

std::string change(const std::optional<double>& value) {
  return value ? fmt::format("{:+.1f}%", 100 * *value) : "-";
}

std::string p_value(const std::optional<double>& p) {
  if (!p) return "-";
  return *p < 1e-3 ? fmt::format("{:.1e}", *p) : fmt::format("{:.3f}", *p);
}

namespace {
std::string short_change(const StructuralChange& change) {
  auto text = [](const nlohmann::json& value) {
    return value.is_string() ? value.get<std::string>() : value.dump();
  };
  if (change.field == "state_bytes" || change.field == "peak_memory_bytes") {
    const bool grew = change.new_value.get<double>() > change.old_value.get<double>();
    return fmt::format("{} {}", change.field, grew ? "grew" : "shrank");
  }
  return fmt::format("{} {} -> {}", change.field, text(change.old_value), text(change.new_value));
}
}  // namespace

std::string structural_tags(const RowDiff& row) {
  std::string tags;
  for (const StructuralChange& change : row.structural) {
    tags += fmt::format("{}{} ({})", tags.empty() ? "" : "; ", short_change(change), change_kind_name(change.kind));
  }
  return tags;
}

std::string row_notes(const RowDiff& row) {
  std::string notes = structural_tags(row);
  const bool explain = row.verdict == Verdict::unsure || row.verdict == Verdict::added ||
                       row.verdict == Verdict::removed;
  if (explain && !row.reason.empty()) notes += (notes.empty() ? "" : "; ") + row.reason;
  return notes;
}

std::string side(const ReportSide& report) {
  std::string details = "run " + (report.run_label.empty() ? "?" : report.run_label);
  if (!report.created_at.empty()) details += ", " + report.created_at;
  if (!report.git_commit.empty()) details += ", git " + report.git_commit.substr(0, 12);
  if (report.git_tree_modified) details += " (modified tree)";
  return fmt::format("{} ({})", report.file, details);
}

std::string verdict_counts(const DiffSummary& summary) {
  std::string text;
  for (Verdict verdict : kAllVerdicts) {
    const auto it = summary.verdicts.find(verdict);
    if (it == summary.verdicts.end() || it->second == 0) continue;
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", it->second, verdict_name(verdict));
  }
  return text.empty() ? "no rows" : text;
}

std::string structural_counts(const DiffSummary& summary) {
  return fmt::format("{} regression(s), {} improvement(s), {} neutral", summary.structural_regressions,
                     summary.structural_improvements, summary.structural_neutral);
}

std::string geomean(const DiffSummary& summary) {
  if (!summary.geomean_ratio) return "geomean new/old median ratio: n/a (no rows measured ok on both sides)";
  return fmt::format("geomean new/old median ratio {:.3f} ({:+.1f}%) over {} row(s) measured ok on both sides",
                     *summary.geomean_ratio, 100 * (*summary.geomean_ratio - 1), summary.geomean_rows);
}

std::string settings(const DiffSettings& s) {
  return fmt::format("two-sided Mann-Whitney U on samples_ms, alpha {}, min effect {:.1f}% on the ratio of medians, "
                     ">= {} samples per side; --fail-on {}",
                     s.timing.alpha, 100 * s.timing.min_effect, s.timing.min_samples,
                     s.fail_on_slower ? "regression" : "never");
}

std::string allowed_difference(const AllowedDifference& difference) {
  const std::string consequence =
      difference.allowed_by == "--allow-hardware-change" ? "timing verdicts compare the machines as much as the code"
      : difference.allowed_by == "--allow-mode-change"   ? "the rows and decisions are of different experiments"
                                                         : "the rows are of different workloads";
  return fmt::format("{}; compared because of {}: {}", difference.message, difference.allowed_by, consequence);
}

std::string result(const DiffResult& diff) {
  const DiffSummary& summary = diff.summary;
  std::string text;
  if (summary.exit_code == 0) {
    text = "no regression (exit 0)";
  } else {
    text = "REGRESSION (exit 1): ";
    for (std::size_t i = 0; i < summary.failing.size(); ++i) text += (i ? ", " : "") + summary.failing[i];
  }
  const auto slower = summary.verdicts.find(Verdict::slower);
  if (!diff.settings.fail_on_slower && slower != summary.verdicts.end() && slower->second > 0) {
    text += fmt::format("; {} SLOWER row(s) not counted (--fail-on never)", slower->second);
  }
  for (const std::string& relaxed : summary.relaxed) text += "; " + relaxed;
  return text;
}

}  // namespace arch_bench::diff_format
