#pragma once
// Internals shared by the cpu and cuda check sets (checks.cpp, cpu_checks.cpp, cuda_checks.cpp);
// callers use checks.hpp.
#include <optional>
#include <string>
#include <vector>

#include "runner/preflight/checks.hpp"

namespace arch_bench::preflight_detail {

struct Version {
  int major = 0, minor = 0;
  auto operator<=>(const Version&) const = default;
};
// "12.4" -> {12, 4}; nullopt for anything else (an empty driver version included).
std::optional<Version> parse_version(const std::string& text);

Check make(std::string id, CheckStatus status, std::string message, nlohmann::json measured = nullptr,
           nlohmann::json required = nullptr);
Check skipped(std::string id, const std::string& why);
// "2 x predicted peak 18.0 MiB = 36.0 MiB"
std::string requirement_text(const Profile& profile, const PlanFacts& plan);

Check kernels_check(const Profile& profile, const PlanFacts& plan);
Check host_memory_check(const Profile& profile, const PlanFacts& plan, const MachineFacts& machine);
// Fails when the plan's dtype is not among the profile's; a pass carries no message yet (the
// backend's check set says why the backend takes the dtype).
Check dtype_in_profile(const Profile& profile, const PlanFacts& plan);
Check cpu_governor_check(const MachineFacts& machine);
Check hypervisor_check(const MachineFacts& machine);
Check load_check(const MachineFacts& machine);

void cpu_checks(const Profile& profile, const PlanFacts& plan, const MachineFacts& machine, std::vector<Check>& checks);
void cuda_checks(const Profile& profile, const PlanFacts& plan, const MachineFacts& machine, std::vector<Check>& checks);

}  // namespace arch_bench::preflight_detail
