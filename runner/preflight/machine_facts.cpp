#include "runner/preflight/machine_facts.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include "core/backends/cpu/host_facts.hpp"
#include "runner/preflight/memory_room.hpp"

namespace arch_bench {

// MemAvailable, not MemFree: the kernel's estimate of what can be allocated without swapping,
// page cache included.
std::optional<std::int64_t> mem_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream fields(line.substr(line.find(':') + 1));
    std::int64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return std::nullopt;
}

MachineFacts read_machine_facts() {
  MachineFacts facts;
  facts.host = host_facts();
  if (const std::optional<MemoryLimit> tightest = read_memory_room().tightest()) {
    facts.host_available_bytes = tightest->room_bytes;
    facts.host_available_source = tightest->source;
  }
  if (std::ifstream loadavg("/proc/loadavg"); loadavg) {
    double one_minute = 0;
    if (loadavg >> one_minute) facts.load_average = one_minute;
  }
  facts.cuda = probe_cuda();
  return facts;
}

nlohmann::json to_json(const CudaProbe& probe) {
  auto text_or_null = [](const std::string& text) { return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text); };
  return {{"compiled_with_cuda", probe.compiled_with_cuda},
          {"usable", probe.usable},
          {"device_count", probe.device_count},
          {"reason", text_or_null(probe.reason)},
          {"driver_version", text_or_null(probe.driver_version)},
          {"runtime_version", text_or_null(probe.runtime_version)},
          {"devices", probe.devices}};
}

}  // namespace arch_bench
