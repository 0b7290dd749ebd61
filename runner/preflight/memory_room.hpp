#pragma once
// How much memory this process may still take, from every limit that applies: the kernel's
// MemAvailable (the host), and the cgroup the process runs in (a container's or a Slurm job's
// limit, often far below what the host has free). A run that passes MemAvailable alone can still be
// killed by its cgroup's OOM killer. `run` compares each cell's predicted process bytes with the
// tightest room before the first allocation (runner/pipeline/check_resources.cpp), and preflight's
// host_memory check reads the same numbers.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace arch_bench {

struct MemoryLimit {
  std::string source;      // "MemAvailable", "cgroup v2 memory.max", "cgroup v1 memory.limit_in_bytes"
  std::int64_t room_bytes = 0;  // what can still be allocated under it
  std::string detail;      // how room_bytes was reached, for messages: "limit 8.0 GiB, 5.1 GiB in use"
};

struct MemoryRoom {
  std::vector<MemoryLimit> limits;  // those that could be read; a cgroup without a limit adds none
  // The limit with the least room, or nullopt when none could be read.
  std::optional<MemoryLimit> tightest() const;
};

// Reads /proc/meminfo, /proc/self/cgroup and the cgroup's files under `cgroup_root` (v2: memory.max,
// memory.current and memory.stat of the process's cgroup and each ancestor; v1: the memory
// controller's memory.limit_in_bytes, memory.usage_in_bytes and memory.stat). Page cache the kernel
// can drop (inactive_file) counts as room. The roots are parameters so that tests can hand it a
// made-up machine.
MemoryRoom read_memory_room(const std::filesystem::path& proc_root = "/proc",
                            const std::filesystem::path& cgroup_root = "/sys/fs/cgroup");

}  // namespace arch_bench
