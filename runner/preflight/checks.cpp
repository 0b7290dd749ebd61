// The checks both backends share (plan memory, dtype list, clocks, virtualisation) and the entry
// point that picks the backend's check set.
#include "runner/preflight/checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "runner/preflight/check_helpers.hpp"

namespace arch_bench {

namespace preflight_detail {

std::optional<Version> parse_version(const std::string& text) {
  Version version;
  if (std::sscanf(text.c_str(), "%d.%d", &version.major, &version.minor) != 2) return std::nullopt;
  return version;
}

Check make(std::string id, CheckStatus status, std::string message, nlohmann::json measured,
           nlohmann::json required) {
  return Check{std::move(id), status, std::move(message), std::move(measured), std::move(required)};
}

Check skipped(std::string id, const std::string& why) {
  return make(std::move(id), CheckStatus::skip, "not checked: " + why);
}

std::string requirement_text(const Profile& profile, const PlanFacts& plan) {
  return fmt::format("{:g} x predicted peak {} = {}", profile.device.free_memory_margin,
                     human_bytes(plan.max_predicted_peak_bytes), human_bytes(required_free_bytes(profile, plan.max_predicted_peak_bytes)));
}

Check kernels_check(const Profile& profile, const PlanFacts& plan) {
  if (plan.mechanisms_without_backend.empty()) {
    return make("kernels", CheckStatus::pass,
                fmt::format("every mechanism of mode {} has a {} implementation", plan.mode, profile.backend));
  }
  return make("kernels", CheckStatus::fail,
              fmt::format("{} ha{} no {} implementation in this build; run with --profile ARCH-CPU-MECHANISM, or "
                          "add the kernels",
                          fmt::join(plan.mechanisms_without_backend, ", "),
                          plan.mechanisms_without_backend.size() == 1 ? "s" : "ve", profile.backend),
              plan.mechanisms_without_backend);
}

// The host must hold the largest cell's whole process share (inputs drawn for the check, staging, the
// reference's results), not only its buffers: checked against the tightest of MemAvailable and the
// cgroup's limit (memory_room.hpp), the numbers `run` refuses with.
Check host_memory_check(const Profile& profile, const PlanFacts& plan, const MachineFacts& machine) {
  const std::int64_t process = std::max(plan.max_predicted_process_bytes, plan.max_predicted_peak_bytes);
  const std::int64_t needed = required_free_bytes(profile, process);
  const std::string requirement = fmt::format("{:g} x predicted process bytes {} = {}", profile.device.free_memory_margin,
                                              human_bytes(process), human_bytes(needed));
  if (!machine.host_available_bytes) {
    return make("host_memory", CheckStatus::warn,
                fmt::format("neither MemAvailable (/proc/meminfo) nor a cgroup limit can be read; make sure {} are "
                            "free ({})",
                            human_bytes(needed), requirement),
                nullptr, needed);
  }
  const std::int64_t available = *machine.host_available_bytes;
  const std::string& source = machine.host_available_source;
  if (available >= needed) {
    return make("host_memory", CheckStatus::pass,
                fmt::format("{} {} >= {}", source, human_bytes(available), requirement), available, needed);
  }
  return make("host_memory", CheckStatus::fail,
              fmt::format("{} {} < {}; free memory, or plan smaller cells (--sequence-lengths, --batch)", source,
                          human_bytes(available), requirement),
              available, needed);
}

Check dtype_in_profile(const Profile& profile, const PlanFacts& plan) {
  const auto& dtypes = profile.device.dtypes;
  if (std::find(dtypes.begin(), dtypes.end(), plan.dtype) != dtypes.end()) return make("dtype", CheckStatus::pass, "");
  std::vector<std::string> names;
  for (DType dtype : dtypes) names.push_back(dtype_name(dtype));
  return make("dtype", CheckStatus::fail,
              fmt::format("the plan's dtype {} is not among profile {}'s dtypes ({}); pass --dtype {} or use a "
                          "profile that covers {}",
                          dtype_name(plan.dtype), profile.id, fmt::join(names, ", "), names.front(),
                          dtype_name(plan.dtype)),
              dtype_name(plan.dtype), names);
}

Check cpu_governor_check(const MachineFacts& machine) {
  const nlohmann::json governor = machine.host.value("frequency_governor", nlohmann::json(nullptr));
  if (!governor.is_string()) {
    return make("cpu_governor", CheckStatus::warn,
                "the CPU frequency governor cannot be read (no cpufreq in /sys, common in VMs and containers); "
                "clocks may change under the benchmark");
  }
  const std::string name = governor.get<std::string>();
  if (name == "performance") {
    return make("cpu_governor", CheckStatus::pass, "frequency governor 'performance'", name, "performance");
  }
  return make("cpu_governor", CheckStatus::warn,
              fmt::format("frequency governor '{}' changes clocks under load; for steadier timings run "
                          "`sudo cpupower frequency-set -g performance`",
                          name),
              name, "performance");
}

Check hypervisor_check(const MachineFacts& machine) {
  if (machine.host.value("hypervisor", false)) {
    return make("hypervisor", CheckStatus::warn,
                "running under a hypervisor: cores and memory bandwidth may be shared with other guests; compare "
                "only runs from the same machine",
                true, false);
  }
  return make("hypervisor", CheckStatus::pass, "bare metal (no hypervisor flag in /proc/cpuinfo)", false, false);
}

// Other work on the cores makes a multi-threaded sample wait for a scheduler slice (milliseconds on
// a 2-core VM), which shows up as huge rel_stdev and as false SLOWER verdicts in `arch-bench diff`.
Check load_check(const MachineFacts& machine) {
  if (!machine.load_average) {
    return make("load", CheckStatus::warn, "the load average cannot be read (/proc/loadavg)");
  }
  const double cores = std::max(1.0, machine.host.value("logical_cores", 1.0));
  const double limit = 0.5 * cores;
  if (*machine.load_average > limit) {
    return make("load", CheckStatus::warn,
                fmt::format("1-minute load {:.2f} on {:.0f} logical cores: other processes compete with the benchmark, "
                            "so multi-threaded samples include scheduler waits; measure on a quiet machine",
                            *machine.load_average, cores),
                *machine.load_average, limit);
  }
  return make("load", CheckStatus::pass,
              fmt::format("1-minute load {:.2f} <= {:.1f} (half the logical cores)", *machine.load_average, limit),
              *machine.load_average, limit);
}

}  // namespace preflight_detail

std::string check_status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::pass: return "pass";
    case CheckStatus::warn: return "warn";
    case CheckStatus::fail: return "fail";
    case CheckStatus::skip: return "skip";
  }
  return "fail";
}

std::vector<Check> run_checks(const Profile& profile, const PlanFacts& plan, const MachineFacts& machine) {
  std::vector<Check> checks;
  if (profile.backend == "cuda") {
    preflight_detail::cuda_checks(profile, plan, machine, checks);
  } else {
    preflight_detail::cpu_checks(profile, plan, machine, checks);
  }
  return checks;
}

std::int64_t required_free_bytes(const Profile& profile, std::int64_t predicted_peak_bytes) {
  return static_cast<std::int64_t>(
      std::ceil(static_cast<double>(predicted_peak_bytes) * profile.device.free_memory_margin));
}

std::string human_bytes(std::int64_t bytes) {
  const double value = static_cast<double>(bytes);
  if (bytes >= (std::int64_t{1} << 30)) return fmt::format("{:.1f} GiB", value / (1 << 30));
  if (bytes >= (std::int64_t{1} << 20)) return fmt::format("{:.1f} MiB", value / (1 << 20));
  if (bytes >= (std::int64_t{1} << 10)) return fmt::format("{:.1f} KiB", value / (1 << 10));
  return fmt::format("{} B", bytes);
}

}  // namespace arch_bench
