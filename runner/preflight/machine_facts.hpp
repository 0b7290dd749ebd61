#pragma once
// What preflight reads from the machine, gathered once so that the checks themselves are pure
// functions of (profile, plan, facts) and can be tested with made-up machines.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/backends/cuda/device_probe.hpp"

namespace arch_bench {

struct MachineFacts {
  nlohmann::json host = nlohmann::json::object();  // host_facts(): cores, governor, hypervisor, ...
  // The least room of MemAvailable and the cgroup's limit (memory_room.hpp); nullopt when neither
  // could be read. `host_available_source` names the limit it came from, for messages.
  std::optional<std::int64_t> host_available_bytes;
  std::string host_available_source = "MemAvailable";
  std::optional<double> load_average;  // 1-minute load from /proc/loadavg; nullopt when unreadable
  CudaProbe cuda;
};

MachineFacts read_machine_facts();
// MemAvailable from /proc/meminfo (what can be allocated without swapping); nullopt when unreadable.
std::optional<std::int64_t> mem_available_bytes();
nlohmann::json to_json(const CudaProbe& probe);

}  // namespace arch_bench
