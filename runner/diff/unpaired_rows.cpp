#include "runner/diff/unpaired_rows.hpp"

#include <limits>
#include <map>

#include <fmt/format.h>

namespace arch_bench {

namespace {
std::string options_text(const nlohmann::json& options) {
  std::string text = options.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

// The same cell of the matrix: a row at a length the other report did not measure is a row that is
// missing, not one measured differently.
bool same_cell(const RowKey& a, const RowKey& b) {
  return a.mechanism == b.mechanism && a.variant == b.variant && a.phase == b.phase &&
         a.sequence_length == b.sequence_length;
}
}  // namespace

std::vector<std::string> key_axis_changes(const RowKey& a, const RowKey& b) {
  std::vector<std::string> changes;
  auto number = [&changes](const char* axis, std::int64_t x, std::int64_t y) {
    if (x != y) changes.push_back(fmt::format("{} {} -> {}", axis, x, y));
  };
  if (a.dtype != b.dtype) changes.push_back(fmt::format("dtype {} -> {}", a.dtype, b.dtype));
  number("heads", a.heads, b.heads);
  number("head_dim", a.head_dim, b.head_dim);
  number("batch", a.batch, b.batch);
  if (a.options != b.options) {
    changes.push_back(fmt::format("options {} -> {}", options_text(a.options), options_text(b.options)));
  }
  return changes;
}

void explain_unpaired_rows(std::vector<RowDiff>& rows, std::vector<std::string>& notes) {
  std::vector<std::size_t> removed, added;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].verdict == Verdict::removed) removed.push_back(i);
    if (rows[i].verdict == Verdict::added) added.push_back(i);
  }
  if (removed.empty() || added.empty()) return;

  // Greedy, in the old report's order: each ADDED row explains at most one REMOVED row. Quadratic in
  // the unpaired rows, which a report of a few hundred cells keeps small.
  std::vector<bool> used(added.size(), false);
  std::map<std::string, int> counts;  // change text -> REMOVED rows it explains
  std::vector<std::string> order;     // change texts in the order first seen
  for (std::size_t r : removed) {
    std::size_t best = added.size();
    std::vector<std::string> best_changes;
    std::size_t fewest = std::numeric_limits<std::size_t>::max();
    for (std::size_t a = 0; a < added.size(); ++a) {
      if (used[a] || !same_cell(rows[r].key, rows[added[a]].key)) continue;
      std::vector<std::string> changes = key_axis_changes(rows[r].key, rows[added[a]].key);
      if (changes.empty() || changes.size() >= fewest) continue;
      fewest = changes.size();
      best = a;
      best_changes = std::move(changes);
    }
    if (best == added.size()) continue;
    used[best] = true;
    const std::string change = fmt::format("{}", fmt::join(best_changes, ", "));
    rows[r].reason = fmt::format("only in the old report; the workload changed: {}", change);
    rows[added[best]].reason = fmt::format("only in the new report; the workload changed: {}", change);
    if (counts[change]++ == 0) order.push_back(change);
  }
  for (const std::string& change : order) {
    notes.push_back(fmt::format("{} row(s) did not pair because the workload changed ({}): they show as REMOVED "
                                "and ADDED, not as timing verdicts",
                                counts[change], change));
  }
}

}  // namespace arch_bench
