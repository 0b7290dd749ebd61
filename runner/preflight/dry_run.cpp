#include "runner/preflight/dry_run.hpp"

#include <fmt/format.h>

#include "runner/preflight/preflight_report.hpp"

namespace arch_bench {

nlohmann::json plan_to_json(const Plan& plan) {
  nlohmann::json cells = nlohmann::json::array();
  for (const PlannedCell& planned : plan.cells) {
    const Cell& cell = planned.cell;
    cells.push_back({{"mechanism", cell.mechanism},
                     {"variant", planned.arm.variant},
                     {"role", role_name(planned.arm.role)},
                     {"phase", phase_name(cell.phase)},
                     {"sequence_length", cell.sequence_length},
                     {"batch", cell.batch},
                     {"heads", cell.heads},
                     {"head_dim", cell.head_dim},
                     {"dtype", dtype_name(cell.dtype)},
                     {"state_kind", planned.mechanism ? state_kind_name(planned.mechanism->info().state_kind)
                                                      : std::string("unknown")},
                     {"state_bytes", planned.state_bytes},
                     {"predicted_peak_bytes", planned.predicted_peak_bytes},
                     {"predicted_process_bytes", planned.predicted_process_bytes}});
  }
  return cells;
}

Decision dry_run_decision(const Plan& plan, const std::string& profile_id, const std::vector<Check>& failed_checks) {
  Decision decision;
  decision.verdict = "dry_run";
  decision.reasons.push_back(fmt::format("plan only: {} cells planned, nothing measured", plan.cells.size()));
  if (failed_checks.empty()) {
    decision.next_action = "run the same command without --dry-run to measure";
    return decision;
  }
  for (const Check& check : failed_checks) {
    decision.reasons.push_back(fmt::format("preflight {} failed: {}", check.id, check.message));
  }
  decision.next_action = fmt::format(
      "fix the failed checks (see `arch-bench preflight --profile {}`) and run again, or run with "
      "--profile ARCH-CPU-MECHANISM for cpu_measured evidence",
      profile_id);
  return decision;
}

Failure preflight_failure(const std::string& profile_id, const std::vector<Check>& failed_checks) {
  std::vector<std::string> ids;
  for (const Check& check : failed_checks) ids.push_back(check.id);
  return Failure{"preflight_failed",
                 fmt::format("preflight of profile {} failed ({}), so nothing was measured; failure.checks says "
                             "why, `arch-bench preflight --profile {}` shows every check",
                             profile_id, fmt::join(ids, ", "), profile_id),
                 std::nullopt};
}

nlohmann::json failed_checks_json(const std::vector<Check>& failed_checks) {
  nlohmann::json checks = nlohmann::json::array();
  for (const Check& check : failed_checks) checks.push_back(to_json(check));
  return checks;
}

void print_plan(std::FILE* out, const Plan& plan) {
  fmt::print(out, "dry run: {} cells planned, nothing measured\n", plan.cells.size());
  fmt::print(out, "  {:<18} {:<10} {:<8} {:>8} {:>14} {:>14} {:>14}\n", "mechanism", "variant", "phase", "L",
             "state_bytes", "peak_bytes", "process_bytes");
  for (const PlannedCell& planned : plan.cells) {
    fmt::print(out, "  {:<18} {:<10} {:<8} {:>8} {:>14} {:>14} {:>14}\n", planned.cell.mechanism,
               planned.arm.variant.empty() ? "-" : planned.arm.variant, phase_name(planned.cell.phase),
               planned.cell.sequence_length, planned.state_bytes, planned.predicted_peak_bytes,
               planned.predicted_process_bytes);
  }
}

}  // namespace arch_bench
