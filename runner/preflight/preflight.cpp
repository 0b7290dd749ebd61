#include "runner/preflight/preflight.hpp"

#include <algorithm>

#include "mechanisms/registry.hpp"

namespace arch_bench {

bool PreflightResult::passed() const {
  return std::none_of(checks.begin(), checks.end(), [](const Check& c) { return c.status == CheckStatus::fail; });
}

std::vector<Check> PreflightResult::failed() const {
  std::vector<Check> failures;
  std::copy_if(checks.begin(), checks.end(), std::back_inserter(failures),
               [](const Check& c) { return c.status == CheckStatus::fail; });
  return failures;
}

std::vector<std::string> mechanisms_without_backend(const Mode& mode, const Workload& workload,
                                                    const std::string& backend) {
  std::vector<std::string> missing;
  for (const Arm& arm : mode.arms(workload)) {
    const Mechanism* mechanism = find_mechanism(arm.mechanism);
    if (mechanism == nullptr) continue;  // build_plan reports unknown mechanisms
    const auto& backends = mechanism->info().backends;
    const bool has = std::find(backends.begin(), backends.end(), backend) != backends.end();
    if (!has && std::find(missing.begin(), missing.end(), arm.mechanism) == missing.end()) {
      missing.push_back(arm.mechanism);
    }
  }
  return missing;
}

Plan plan_for_backend(const Mode& mode, const Workload& workload, const std::string& backend) {
  const bool implemented = mechanisms_without_backend(mode, workload, backend).empty();
  return build_plan(mode, workload, implemented ? backend : "cpu");
}

PreflightResult run_preflight(const Profile& profile, const Mode& mode, const Workload& workload,
                              MachineFacts machine) {
  PreflightResult result;
  result.plan = plan_for_backend(mode, workload, profile.backend);
  result.plan_facts = PlanFacts{mode.id(), static_cast<std::int64_t>(result.plan.cells.size()),
                                result.plan.max_predicted_peak_bytes(), workload.dtype,
                                mechanisms_without_backend(mode, workload, profile.backend),
                                result.plan.max_predicted_process_bytes()};
  result.required_free_bytes = required_free_bytes(profile, result.plan_facts.max_predicted_peak_bytes);
  result.machine = std::move(machine);
  result.checks = run_checks(profile, result.plan_facts, result.machine);
  return result;
}

}  // namespace arch_bench
