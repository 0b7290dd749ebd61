#pragma once
// What a run writes instead of evidence: with --dry-run, or when its profile's preflight failed
// (seed 003, 5.1: "stay dry_run, produce no mechanism evidence"). The report keeps identity and
// workload, adds the plan (one entry per cell with its predicted bytes) and carries no timings.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/run_result.hpp"
#include "runner/preflight/checks.hpp"

namespace arch_bench {

// The report's top-level "plan": mechanism, variant, role, phase, sequence_length, batch, heads,
// head_dim, dtype, state_kind, state_bytes, predicted_peak_bytes per planned cell.
nlohmann::json plan_to_json(const Plan& plan);

// verdict "dry_run"; next_action says how to get real evidence (fix the failed checks first,
// when there are any).
Decision dry_run_decision(const Plan& plan, const std::string& profile_id, const std::vector<Check>& failed_checks);

// failure.kind "preflight_failed"; the checks themselves go in failure.checks (failed_checks_json).
Failure preflight_failure(const std::string& profile_id, const std::vector<Check>& failed_checks);
nlohmann::json failed_checks_json(const std::vector<Check>& failed_checks);

// One line per planned cell, for the terminal.
void print_plan(std::FILE* out, const Plan& plan);

}  // namespace arch_bench
