#pragma once
// What preflight reads from the machine, gathered once so that the checks themselves are pure
// functions of (profile, plan, facts) and can be tested with made-up machines.
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/backends/cuda/device_probe.hpp"

namespace arch_bench {

struct MachineFacts {
  nlohmann::json host = nlohmann::json::object();  // host_facts(): cores, governor, hypervisor, ...
  std::optional<std::int64_t> host_available_bytes;  // MemAvailable; nullopt when unreadable
  std::optional<double> load_average;  // 1-minute load from /proc/loadavg; nullopt when unreadable
  CudaProbe cuda;
};

MachineFacts read_machine_facts();
// MemAvailable from /proc/meminfo (what can be allocated without swapping); nullopt when unreadable.
std::optional<std::int64_t> mem_available_bytes();
nlohmann::json to_json(const CudaProbe& probe);

}  // namespace arch_bench
