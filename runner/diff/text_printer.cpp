// The diff as an aligned table: one line per row, then structural changes, counts and the result.
#include <algorithm>
#include <array>
#include <vector>

#include <fmt/format.h>

#include "runner/diff/cell_format.hpp"
#include "runner/diff/printers.hpp"

namespace arch_bench {

std::string format_diff_text(const DiffResult& diff) {
  namespace f = diff_format;
  std::string out;
  out += "arch-bench diff\n";
  for (const AllowedDifference& difference : diff.allowed_differences) {
    out += fmt::format("WARNING: {}\n", f::allowed_difference(difference));
  }
  out += fmt::format("  old: {}\n  new: {}\n", f::side(diff.old_report), f::side(diff.new_report));
  out += fmt::format("  {}\n", f::settings(diff.settings));
  for (const std::string& note : diff.notes) out += fmt::format("note: {}\n", note);

  using Line = std::array<std::string, 7>;
  std::vector<Line> lines{{"row", "old median ms", "new median ms", "change", "p", "verdict", "notes"}};
  for (const RowDiff& row : diff.rows) {
    lines.push_back({row.label, f::milliseconds(row.timing.old_median_ms), f::milliseconds(row.timing.new_median_ms),
                     f::change(row.timing.change), f::p_value(row.timing.p_value), verdict_name(row.verdict),
                     f::row_notes(row)});
  }
  std::array<std::size_t, 7> width{};
  for (const Line& line : lines) {
    for (std::size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  }
  out += "\n";
  if (diff.rows.empty()) out += "(neither report has rows)\n";
  for (std::size_t i = 0; i < lines.size() && !diff.rows.empty(); ++i) {
    const Line& line = lines[i];
    std::string text = fmt::format("{:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:<{}}", line[0], width[0], line[1],
                                   width[1], line[2], width[2], line[3], width[3], line[4], width[4], line[5],
                                   width[5]);
    if (!line[6].empty()) text += "  " + line[6];
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }

  bool any_structural = !diff.report_changes.empty();
  for (const RowDiff& row : diff.rows) any_structural = any_structural || !row.structural.empty();
  if (any_structural) {
    out += "\nstructural changes:\n";
    for (const StructuralChange& change : diff.report_changes) {
      out += fmt::format("  {:<11}  report: {}\n", change_kind_name(change.kind), change.message);
    }
    for (const RowDiff& row : diff.rows) {
      for (const StructuralChange& change : row.structural) {
        out += fmt::format("  {:<11}  {}: {}\n", change_kind_name(change.kind), row.label, change.message);
      }
    }
  }

  out += fmt::format("\nverdicts: {}\n", f::verdict_counts(diff.summary));
  out += fmt::format("structural: {}\n", f::structural_counts(diff.summary));
  out += f::geomean(diff.summary) + "\n";
  out += fmt::format("result: {}\n", f::result(diff));
  return out;
}

}  // namespace arch_bench
