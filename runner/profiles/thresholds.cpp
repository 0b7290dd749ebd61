#include "runner/profiles/thresholds.hpp"

#include <fmt/format.h>

namespace arch_bench {

std::vector<std::string> noisy_row_notes(std::span<const Row> rows, double max_rel_stdev) {
  std::vector<std::string> notes;
  for (const Row& row : rows) {
    if (row.status != RowStatus::ok || row.samples_ms.empty() || row.stats.rel_stdev <= max_rel_stdev) continue;
    notes.push_back(fmt::format("{}{}{} {} L={}: rel_stdev {:.3f} exceeds the profile's max_rel_stdev {:.3f}; "
                                "rerun with more --repeats or on a quieter machine before comparing it",
                                row.cell.mechanism, row.variant.empty() ? "" : " ", row.variant,
                                phase_name(row.cell.phase), row.cell.sequence_length, row.stats.rel_stdev,
                                max_rel_stdev));
  }
  return notes;
}

}  // namespace arch_bench
