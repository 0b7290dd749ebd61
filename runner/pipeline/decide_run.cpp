#include "runner/pipeline/decide_run.hpp"

#include <csignal>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/backends/cpu/host_facts.hpp"
#include "runner/preflight/dry_run.hpp"
#include "runner/profiles/thresholds.hpp"
#include "runner/report/team_trial_note.hpp"

namespace arch_bench {

void decide_run(RunReport& report, const Mode& mode, std::size_t planned_cells, const ShardSelection* shard,
                const Profile* profile, int stop_signal) {
  report.decision = mode.decide(report.rows, report.workload);
  if (shard != nullptr) mark_partial_decision(report.decision, *shard);
  if (!report.failure) report.failure = first_row_failure(report.rows);
  if (const std::optional<std::string> note = team_trial_note(report.rows)) report.notes.push_back(*note);
  if (profile != nullptr) {
    for (const std::string& note : noisy_row_notes(report.rows, profile->thresholds.max_rel_stdev)) {
      report.notes.push_back(note);
    }
  }
  if (stop_signal != 0) mark_interrupted(report, planned_cells, stop_signal);
}

void decide_dry_run(RunReport& report, const Plan& plan, const PreflightResult* preflight) {
  const std::vector<Check> failed = preflight != nullptr ? preflight->failed() : std::vector<Check>{};
  report.evidence_level = "dry_run";
  report.host = preflight != nullptr ? preflight->machine.host : host_facts();
  if (preflight != nullptr && preflight->machine.cuda.usable) report.gpu = preflight->machine.cuda.devices;
  report.decision = dry_run_decision(plan, report.identity.profile_id, failed);
  if (!failed.empty()) report.failure = preflight_failure(report.identity.profile_id, failed);
}

std::optional<Failure> first_row_failure(std::span<const Row> rows) {
  for (const Row& row : rows) {
    if (row.status == RowStatus::failed) {
      return Failure{row.failure_kind.empty() ? "mechanism_error" : row.failure_kind, row.reason, row.cell};
    }
  }
  return std::nullopt;
}

void mark_interrupted(RunReport& report, std::size_t planned_cells, int signal_number) {
  const char* name = signal_number == SIGINT ? "SIGINT" : signal_number == SIGTERM ? "SIGTERM" : "a signal";
  std::optional<Cell> cell;
  for (const Row& row : report.rows) {
    if (row.failure_kind == "interrupted") cell = row.cell;
  }
  const std::string message =
      report.rows.empty()
          ? fmt::format("interrupted by {} before the first cell (0 of {} cells measured); the report holds no rows",
                        name, planned_cells)
          : fmt::format("interrupted by {} after {} of {} cells; the rows measured so far are kept and the cells not "
                        "measured are absent",
                        name, report.rows.size(), planned_cells);
  report.failure = Failure{"interrupted", message, cell};
  report.decision.verdict = "inconclusive";
  report.decision.crossover_length.reset();
  if (report.rows.empty()) {
    // The mode's rule, run over no rows, finds every property unshown ("state bytes change with
    // sequence length", ratios of nothing): reasons about rows that do not exist. The interruption is
    // the only thing this report can say.
    report.decision.reasons = {message};
    report.decision.details = nlohmann::json::object();
  } else {
    report.decision.reasons.insert(report.decision.reasons.begin(), message);
  }
  report.decision.next_action = "re-run the whole plan: an interrupted run decides nothing";
}

}  // namespace arch_bench
