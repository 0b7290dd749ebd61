#pragma once
// `preflight`: checks a profile against this machine for one plan. `run --profile` calls it
// before measuring anything; the `preflight` command prints and writes its result.
#include <string>
#include <vector>

#include "runner/pipeline/plan.hpp"
#include "runner/preflight/checks.hpp"
#include "runner/preflight/machine_facts.hpp"
#include "runner/profiles/profile.hpp"

namespace arch_bench {

struct PreflightResult {
  std::vector<Check> checks;
  Plan plan;
  PlanFacts plan_facts;
  MachineFacts machine;
  std::int64_t required_free_bytes = 0;  // margin x plan.max_predicted_peak_bytes()

  bool passed() const;                  // no check failed (warnings pass)
  std::vector<Check> failed() const;
};

// Mechanisms of the mode (for this workload) that have no implementation on `backend`.
std::vector<std::string> mechanisms_without_backend(const Mode& mode, const Workload& workload,
                                                    const std::string& backend);

// The plan for `backend`; when some mechanism lacks that backend, the same cells planned for the
// CPU (a cell's predicted bytes do not depend on the backend), so that a dry run and the memory
// checks still have numbers. Throws UsageError for a workload the mechanisms cannot take.
Plan plan_for_backend(const Mode& mode, const Workload& workload, const std::string& backend);

PreflightResult run_preflight(const Profile& profile, const Mode& mode, const Workload& workload,
                              MachineFacts machine);

}  // namespace arch_bench
