#include "runner/modes/decision_rules.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/registry.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace arch_bench {

std::vector<const Row*> arm_rows(std::span<const Row> rows, const std::string& mechanism,
                                 const std::string& variant, Phase phase) {
  std::vector<const Row*> selected;
  for (const Row& row : rows) {
    if (row.cell.mechanism == mechanism && row.variant == variant && row.cell.phase == phase) {
      selected.push_back(&row);
    }
  }
  std::sort(selected.begin(), selected.end(), [](const Row* a, const Row* b) {
    return a->cell.sequence_length < b->cell.sequence_length;
  });
  return selected;
}

std::string row_label(const Row& row) {
  std::string label = fmt::format("{} {} L={}", row.cell.mechanism, phase_name(row.cell.phase),
                                  row.cell.sequence_length);
  if (!row.variant.empty()) label += fmt::format(" [{}]", row.variant);
  return label;
}

std::vector<std::string> unhealthy_row_reasons(std::span<const Row> rows) {
  std::vector<std::string> reasons;
  for (const Row& row : rows) {
    if (row.status != RowStatus::ok) {
      reasons.push_back(fmt::format("{} {}: {}", row_label(row), row_status_name(row.status), row.reason));
    } else if (!row.accuracy.output_finite) {
      reasons.push_back(fmt::format("{}: output has non-finite values", row_label(row)));
    } else if (!row.within_tolerance()) {
      reasons.push_back(fmt::format("{}: max_rel_error {:.3g} exceeds the {} tolerance {:.3g}", row_label(row),
                                    row.accuracy.max_rel_error, dtype_name(row.cell.dtype), row.tolerance));
    }
  }
  return reasons;
}

bool state_is_fixed(const std::vector<const Row*>& rows) {
  if (rows.empty()) return false;
  return std::all_of(rows.begin(), rows.end(),
                     [&](const Row* row) { return row->state_bytes == rows.front()->state_bytes; });
}

bool state_is_bounded(const std::vector<const Row*>& rows) {
  if (rows.empty()) return false;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i]->state_bytes < rows[i - 1]->state_bytes) return false;
  }
  const Row* longest = rows.back();  // arm_rows sorts by length
  const Mechanism* mechanism = find_mechanism(longest->cell.mechanism);
  if (mechanism == nullptr) return false;
  Cell twice = longest->cell;
  twice.sequence_length *= 2;
  return mechanism->state_bytes(twice) == longest->state_bytes;
}

bool state_grows_with_length(const std::vector<const Row*>& rows) {
  if (rows.size() < 2) return false;
  const Row* first = rows.front();
  if (rows.back()->cell.sequence_length == first->cell.sequence_length) return false;
  // Integer cross-multiplication: bytes_a / L_a == bytes_b / L_b without rounding (in 128 bits: two
  // 2^48-byte sizes times lengths do not fit in 64).
  return std::all_of(rows.begin(), rows.end(), [&](const Row* row) {
    return static_cast<__int128>(row->state_bytes) * first->cell.sequence_length ==
               static_cast<__int128>(first->state_bytes) * row->cell.sequence_length &&
           row->state_bytes > 0;
  });
}

bool output_not_finite(const Row& row) {
  return !row.accuracy.output_finite || row.failure_kind == "non_finite_output";
}

std::optional<std::string> invalid_inputs_reason(std::span<const Row> rows, const Workload& workload) {
  std::vector<std::string> cells;
  for (const Row& row : rows) {
    if (row.role == Role::baseline && output_not_finite(row)) cells.push_back(row_label(row));
  }
  if (cells.empty()) return std::nullopt;
  const double qk_scale = qk_scale_option().number(workload.options);
  const std::string scale = qk_scale != 1.0 ? fmt::format(" (--qk-scale {})", qk_scale) : std::string();
  return fmt::format("baseline outputs are not finite: the inputs are out of range{} ({}); no timing or accuracy "
                     "verdict about the candidates can be drawn from this run",
                     scale, fmt::join(cells, ", "));
}

std::map<std::int64_t, double> time_ratio_by_length(const std::vector<const Row*>& baseline,
                                                    const std::vector<const Row*>& candidate) {
  std::map<std::int64_t, double> ratios;
  for (const Row* b : baseline) {
    for (const Row* c : candidate) {
      if (c->cell.sequence_length != b->cell.sequence_length) continue;
      if (b->status != RowStatus::ok || c->status != RowStatus::ok || b->stats.median <= 0) continue;
      if (output_not_finite(*b) || output_not_finite(*c)) continue;
      ratios[b->cell.sequence_length] = c->stats.median / b->stats.median;
    }
  }
  return ratios;
}

std::optional<std::int64_t> crossover_length(const std::map<std::int64_t, double>& ratio_by_length) {
  std::optional<std::int64_t> crossover;
  // Walk from the longest length down while the candidate stays cheaper.
  for (auto it = ratio_by_length.rbegin(); it != ratio_by_length.rend(); ++it) {
    if (it->second >= 1.0) break;
    crossover = it->first;
  }
  return crossover;
}

bool decide_unusable_run(Decision& decision, std::span<const Row> rows, const Workload& workload,
                         std::span<const Row> decisive, bool unhealthy,
                         const std::function<bool(const Row&)>& of_candidate, const std::string& inputs_advice,
                         const std::string& fix_advice) {
  if (const auto invalid = invalid_inputs_reason(rows, workload)) {
    decision.verdict = "inconclusive";
    decision.crossover_length.reset();
    decision.reasons.insert(decision.reasons.begin(), *invalid);
    decision.next_action = inputs_advice;
    return true;
  }
  if (!unhealthy) return false;
  const bool candidate_at_fault = std::any_of(decisive.begin(), decisive.end(), [&](const Row& row) {
    return of_candidate(row) && row.status == RowStatus::ok && !row.within_tolerance();
  });
  decision.verdict = candidate_at_fault ? "reject_candidate_outputs_incorrect" : "inconclusive";
  decision.next_action =
      candidate_at_fault ? fix_advice : "re-run the failed or skipped cells (see reasons) before deciding";
  return true;
}

}  // namespace arch_bench
