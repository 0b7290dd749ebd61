#include "runner/report/team_trial_note.hpp"

#include <fmt/format.h>

namespace arch_bench {

namespace {
constexpr std::size_t kRowsNamed = 4;  // a console line, not a table: the JSON has every row
}  // namespace

std::optional<std::string> team_trial_note(std::span<const Row> rows) {
  std::vector<std::string> named;
  std::size_t count = 0;
  for (const Row& row : rows) {
    if (!row.one_thread_samples || *row.one_thread_samples == 0) continue;
    ++count;
    if (named.size() == kRowsNamed) continue;
    std::string text = fmt::format("{} {} L={} ({} of {} samples", row.cell.mechanism, phase_name(row.cell.phase),
                                   row.cell.sequence_length, *row.one_thread_samples, row.samples_ms.size());
    if (row.trial_one_thread_median_us && row.trial_team_median_us) {
      text += fmt::format("; trial {:.2f} vs {:.2f} us", *row.trial_one_thread_median_us, *row.trial_team_median_us);
    }
    named.push_back(text + ")");
  }
  if (count == 0) return std::nullopt;
  std::string note = fmt::format("team trial: {} of {} row(s) took samples on one thread, which measured faster than "
                                 "the split step in their visits (one_thread_samples; trial one thread vs team): ",
                                 count, rows.size());
  for (std::size_t i = 0; i < named.size(); ++i) note += (i == 0 ? "" : ", ") + named[i];
  if (count > named.size()) note += fmt::format(", and {} more", count - named.size());
  return note;
}

}  // namespace arch_bench
