// The checks of a cpu profile: the CPU backend is always built in, so what can fail is the plan's
// memory against MemAvailable and the dtype; clocks and virtualisation only warn.
#include <fmt/format.h>

#include "runner/preflight/check_helpers.hpp"

namespace arch_bench::preflight_detail {

void cpu_checks(const Profile& profile, const PlanFacts& plan, const MachineFacts& machine,
                std::vector<Check>& checks) {
  const std::int64_t cores = machine.host.value("logical_cores", std::int64_t{0});
  checks.push_back(make("backend", CheckStatus::pass,
                        fmt::format("CPU backend built in ({}, {} logical cores)",
                                    machine.host.value("cpu_model", std::string("unknown CPU")), cores),
                        "cpu", "cpu"));
  checks.push_back(kernels_check(profile, plan));
  if (profile.device.logical_cores_min > 0) {
    const bool enough = cores >= profile.device.logical_cores_min;
    checks.push_back(make("logical_cores", enough ? CheckStatus::pass : CheckStatus::fail,
                          fmt::format("{} logical cores {} {} required{}", cores, enough ? ">=" : "<",
                                      profile.device.logical_cores_min, enough ? "" : "; use a larger machine"),
                          cores, profile.device.logical_cores_min));
  }
  checks.push_back(host_memory_check(profile, plan, machine));
  Check dtype = dtype_in_profile(profile, plan);
  if (dtype.status == CheckStatus::pass) {
    dtype.message = plan.dtype == DType::bfloat16
                        ? "bfloat16 is stored as bf16 and converted in software (fp32 accumulation): any CPU"
                        : "float32 is native on every CPU";
    dtype.measured = dtype_name(plan.dtype);
  }
  checks.push_back(std::move(dtype));
  checks.push_back(cpu_governor_check(machine));
  checks.push_back(hypervisor_check(machine));
  checks.push_back(load_check(machine));
}

}  // namespace arch_bench::preflight_detail
