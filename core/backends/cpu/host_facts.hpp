#pragma once
// Facts about the host that make a report self-describing: CPU model, cores, caches, memory,
// OS, compiler, build type, git commit, frequency governor.
#include <cstdint>

#include <nlohmann/json.hpp>

namespace arch_bench {

nlohmann::json host_facts();
// Size of the last-level cache in bytes (0 when unknown).
std::int64_t last_level_cache_bytes();
// One core's private data cache in bytes: L2, else L1d (0 when unknown). L2 is per core on every x86
// and Arm server core this project has met (2 MiB on Sapphire Rapids, 512 KiB on Zen 3).
std::int64_t private_cache_bytes();
// The host's memory (MemTotal) in bytes, 0 when unreadable.
std::int64_t host_memory_bytes();
// The process's resident-set high-water mark (VmHWM) in bytes, 0 when unreadable.
std::int64_t process_peak_rss_bytes();

}  // namespace arch_bench
