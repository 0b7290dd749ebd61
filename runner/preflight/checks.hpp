#pragma once
// The preflight checks: does this machine meet a profile's requirements for this plan? Each check
// is a pure function of the profile, the plan's facts and the machine's facts, so tests can hand
// it a made-up GPU.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "runner/preflight/machine_facts.hpp"
#include "runner/profiles/profile.hpp"

namespace arch_bench {

// pass: requirement met. warn: met, or not checkable, but the numbers may suffer (clocks,
// hypervisor). fail: not met; a run under the profile would produce no evidence.
// skip: not checked because an earlier check failed (e.g. no device to read a clock from).
enum class CheckStatus { pass, warn, fail, skip };
std::string check_status_name(CheckStatus status);  // "pass", "warn", "fail", "skip"

struct Check {
  std::string id;  // stable name, e.g. "backend", "compute_capability", "host_memory"
  CheckStatus status = CheckStatus::pass;
  std::string message;                      // why, and what to do when it is not a pass
  nlohmann::json measured = nullptr;        // what the machine has
  nlohmann::json required = nullptr;        // what the profile asks for
};

// What the checks need to know about the plan.
struct PlanFacts {
  std::string mode;
  std::int64_t cells = 0;
  std::int64_t max_predicted_peak_bytes = 0;
  DType dtype = DType::bfloat16;
  std::vector<std::string> mechanisms_without_backend;  // mechanisms lacking the profile's backend
  // The largest cell's predicted process bytes (Mechanism::predicted_process_bytes): what the host
  // must have free, whichever backend holds the buffers.
  std::int64_t max_predicted_process_bytes = 0;
};

std::vector<Check> run_checks(const Profile& profile, const PlanFacts& plan, const MachineFacts& machine);

// Free memory a plan needs under a profile: margin x the largest predicted peak of one cell (cells
// run one at a time).
std::int64_t required_free_bytes(const Profile& profile, std::int64_t predicted_peak_bytes);

// "1.5 GiB", "320.0 MiB", "512 B": sizes for people.
std::string human_bytes(std::int64_t bytes);

}  // namespace arch_bench
