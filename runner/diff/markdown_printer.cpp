// The diff as GitHub-flavoured Markdown, for a CI job summary ($GITHUB_STEP_SUMMARY) or a PR comment.
#include <fmt/format.h>

#include "runner/diff/cell_format.hpp"
#include "runner/diff/printers.hpp"
#include "runner/present/markdown_escape.hpp"
#include "runner/present/printable_text.hpp"

namespace arch_bench {

namespace {
// Labels, notes and reasons come from the reports: as inert text (no HTML, links or code spans a
// hostile label could open; markdown_escape.hpp), safe in a table cell.
std::string cell(const std::string& text) { return markdown_text(text); }

// A label as a code span: inside one, Markdown renders no HTML and follows no link, so only a
// backtick (which would end the span), a pipe (which GitHub reads as a cell break even there), a
// line break and control bytes need care.
std::string code(const std::string& text) {
  if (text.empty()) return "";
  std::string inside;
  for (char c : escape_control_bytes(text)) {
    if (c == '`') inside += '\'';
    else if (c == '|') inside += "\\|";
    else if (c == '\n' || c == '\r') inside += ' ';
    else inside += c;
  }
  return "`" + inside + "`";
}
}  // namespace

std::string format_diff_markdown(const DiffResult& diff) {
  namespace f = diff_format;
  std::string out;
  out += fmt::format("### arch-bench diff: {} → {}\n\n", code(diff.old_report.run_label),
                     code(diff.new_report.run_label));
  for (const AllowedDifference& difference : diff.allowed_differences) {
    out += fmt::format("> **Warning:** {}\n\n", cell(f::allowed_difference(difference)));
  }
  out += fmt::format("**Result: {}**\n\n", cell(f::result(diff)));
  out += fmt::format("- old: {}\n- new: {}\n- {}\n", cell(f::side(diff.old_report)), cell(f::side(diff.new_report)),
                     f::settings(diff.settings));
  for (const std::string& note : diff.notes) out += fmt::format("- note: {}\n", cell(note));
  out += "\n";

  if (diff.rows.empty()) {
    out += "_Neither report has rows._\n";
  } else {
    out += "| row | old median ms | new median ms | change | p | verdict | notes |\n";
    out += "|---|---:|---:|---:|---:|---|---|\n";
    for (const RowDiff& row : diff.rows) {
      const std::string verdict = verdict_name(row.verdict);
      const bool loud = row.verdict == Verdict::slower || !row.structural.empty();
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", code(row.label),
                         f::milliseconds(row.timing.old_median_ms), f::milliseconds(row.timing.new_median_ms),
                         f::change(row.timing.change), f::p_value(row.timing.p_value),
                         loud ? "**" + verdict + "**" : verdict, cell(f::row_notes(row)));
    }
  }

  bool any_structural = !diff.report_changes.empty();
  for (const RowDiff& row : diff.rows) any_structural = any_structural || !row.structural.empty();
  if (any_structural) {
    out += "\n**Structural changes**\n\n";
    for (const StructuralChange& change : diff.report_changes) {
      out += fmt::format("- {}: report: {}\n", change_kind_name(change.kind), cell(change.message));
    }
    for (const RowDiff& row : diff.rows) {
      for (const StructuralChange& change : row.structural) {
        out += fmt::format("- {}: {}: {}\n", change_kind_name(change.kind), code(row.label), cell(change.message));
      }
    }
  }
  out += fmt::format("\nVerdicts: {}. Structural: {}. {}.\n", f::verdict_counts(diff.summary),
                     f::structural_counts(diff.summary), f::geomean(diff.summary));
  return out;
}

}  // namespace arch_bench
