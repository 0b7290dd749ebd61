#include "runner/preflight/memory_room.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "runner/preflight/checks.hpp"

namespace arch_bench {

namespace {

namespace fs = std::filesystem;

// A cgroup v1 "no limit" is a page-rounded 2^63 - 1; anything from 2^60 up is no limit.
constexpr std::int64_t kUnlimited = std::int64_t{1} << 60;

std::optional<std::int64_t> read_integer(const fs::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text.empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used != text.size() || value < 0) return std::nullopt;
    return static_cast<std::int64_t>(value);
  } catch (const std::exception&) {
    return std::nullopt;  // "max" (v2: no limit), or garbage
  }
}

// `key value` lines (memory.stat); nullopt when the key is absent.
std::optional<std::int64_t> read_stat(const fs::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string name;
  std::int64_t value = 0;
  while (in >> name >> value) {
    if (name == key) return value;
  }
  return std::nullopt;
}

std::optional<MemoryLimit> mem_available(const fs::path& proc_root) {
  std::ifstream meminfo(proc_root / "meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream fields(line.substr(line.find(':') + 1));
    std::int64_t kib = 0;
    if (fields >> kib) return MemoryLimit{"MemAvailable", kib * 1024, "/proc/meminfo"};
  }
  return std::nullopt;
}

MemoryLimit cgroup_limit(std::string source, std::int64_t limit, std::int64_t usage, std::int64_t reclaimable,
                         const fs::path& folder) {
  const std::int64_t in_use = std::max<std::int64_t>(0, usage - reclaimable);
  return MemoryLimit{std::move(source), std::max<std::int64_t>(0, limit - in_use),
                     fmt::format("limit {}, {} in use ({} less {} of reclaimable page cache) in {}", human_bytes(limit),
                                 human_bytes(in_use), human_bytes(usage), human_bytes(reclaimable), folder.string())};
}

// The folder of the process's cgroup under `mount`: `mount/path` when the mount shows the whole
// hierarchy, `mount` itself when it is the cgroup's own (a container's namespaced view).
std::optional<fs::path> cgroup_folder(const fs::path& mount, const std::string& path, const char* probe) {
  const fs::path relative = fs::path(path).relative_path();
  std::error_code error;
  if (!relative.empty() && fs::exists(mount / relative / probe, error)) return mount / relative;
  if (fs::exists(mount / probe, error)) return mount;
  return std::nullopt;
}

// v2: the least room over the cgroup and its ancestors up to the mount (a parent's memory.max
// bounds its children).
std::optional<MemoryLimit> cgroup_v2(const fs::path& mount, const std::string& path) {
  const std::optional<fs::path> leaf = cgroup_folder(mount, path, "memory.current");
  if (!leaf) return std::nullopt;
  std::optional<MemoryLimit> tightest;
  for (fs::path folder = *leaf;; folder = folder.parent_path()) {
    const std::optional<std::int64_t> limit = read_integer(folder / "memory.max");
    const std::optional<std::int64_t> usage = read_integer(folder / "memory.current");
    if (limit && usage && *limit < kUnlimited) {
      MemoryLimit here = cgroup_limit("cgroup v2 memory.max", *limit, *usage,
                                      read_stat(folder / "memory.stat", "inactive_file").value_or(0), folder);
      if (!tightest || here.room_bytes < tightest->room_bytes) tightest = here;
    }
    if (folder == mount || folder == folder.parent_path() || !folder.string().starts_with(mount.string())) break;
  }
  return tightest;
}

// v1: memory.stat's hierarchical_memory_limit already takes the ancestors' limits into account.
std::optional<MemoryLimit> cgroup_v1(const fs::path& mount, const std::string& path) {
  const std::optional<fs::path> folder = cgroup_folder(mount, path, "memory.usage_in_bytes");
  if (!folder) return std::nullopt;
  std::optional<std::int64_t> limit = read_stat(*folder / "memory.stat", "hierarchical_memory_limit");
  if (!limit) limit = read_integer(*folder / "memory.limit_in_bytes");
  const std::optional<std::int64_t> usage = read_integer(*folder / "memory.usage_in_bytes");
  if (!limit || !usage || *limit >= kUnlimited) return std::nullopt;
  return cgroup_limit("cgroup v1 memory.limit_in_bytes", *limit, *usage,
                      read_stat(*folder / "memory.stat", "total_inactive_file").value_or(0), *folder);
}

}  // namespace

std::optional<MemoryLimit> MemoryRoom::tightest() const {
  std::optional<MemoryLimit> least;
  for (const MemoryLimit& limit : limits) {
    if (!least || limit.room_bytes < least->room_bytes) least = limit;
  }
  return least;
}

MemoryRoom read_memory_room(const fs::path& proc_root, const fs::path& cgroup_root) {
  MemoryRoom room;
  if (auto available = mem_available(proc_root)) room.limits.push_back(*available);
  // /proc/self/cgroup: "0::/path" (v2), "N:controller[,controller]:/path" (v1).
  std::ifstream cgroups(proc_root / "self" / "cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::optional<MemoryLimit> limit;
    if (line.starts_with("0::")) {
      limit = cgroup_v2(cgroup_root, path);
      if (!limit) limit = cgroup_v2(cgroup_root / "unified", path);  // the hybrid layout
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      limit = cgroup_v1(cgroup_root / "memory", path);
    }
    if (limit) room.limits.push_back(*limit);
  }
  return room;
}

}  // namespace arch_bench
