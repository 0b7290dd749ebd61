#include "core/backends/cpu/host_facts.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "build_info.hpp"
#include "core/backends/cpu/usable_cpus.hpp"

namespace arch_bench {

namespace {

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return std::nullopt;
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

// The value after "key<whitespace>:" in a "key : value" file (/proc/cpuinfo, /proc/meminfo,
// /proc/self/status), first occurrence only.
std::optional<std::string> read_keyed_value(const std::string& path, const std::string& key) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
    if (name != key) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return std::nullopt;
}

// "1924 kB" -> bytes.
std::int64_t kib_value_bytes(const std::optional<std::string>& value) {
  if (!value) return 0;
  try {
    return std::stoll(*value) * 1024;
  } catch (const std::exception&) {
    return 0;
  }
}

// sysfs cache sizes read "32K", "32768K" or "1M".
std::int64_t parse_cache_size(const std::string& text) {
  std::size_t used = 0;
  std::int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return 0;
  }
  const char unit = used < text.size() ? static_cast<char>(std::toupper(text[used])) : ' ';
  if (unit == 'K') return value << 10;
  if (unit == 'M') return value << 20;
  if (unit == 'G') return value << 30;
  return value;
}

struct CacheSizes {
  std::int64_t l1d = 0, l2 = 0, l3 = 0;  // per instance (what one core sees), 0 when unknown
};

// sysfs first: glibc's sysconf reports a whole-package L3 on some AMD/VM hosts (256 MiB where
// the core's CCX has 32 MiB), which would size the bandwidth buffers wrongly.
CacheSizes cache_sizes() {
  CacheSizes sizes;
  for (int index = 0;; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    const auto level = read_first_line(dir + "/level");
    const auto type = read_first_line(dir + "/type");
    const auto size = read_first_line(dir + "/size");
    if (!level || !type || !size) break;
    if (*type == "Instruction") continue;
    const std::int64_t bytes = parse_cache_size(*size);
    if (*level == "1") sizes.l1d = bytes;
    if (*level == "2") sizes.l2 = bytes;
    if (*level == "3") sizes.l3 = bytes;
  }
  const auto from_sysconf = [](int name, std::int64_t& slot) {
    if (slot == 0) slot = std::max<long>(0, sysconf(name));
  };
#ifdef _SC_LEVEL1_DCACHE_SIZE
  from_sysconf(_SC_LEVEL1_DCACHE_SIZE, sizes.l1d);
  from_sysconf(_SC_LEVEL2_CACHE_SIZE, sizes.l2);
  from_sysconf(_SC_LEVEL3_CACHE_SIZE, sizes.l3);
#endif
  return sizes;
}

nlohmann::json bytes_or_null(std::int64_t bytes) {
  return bytes > 0 ? nlohmann::json(bytes) : nlohmann::json(nullptr);
}

bool cpu_flag_present(const std::string& flag) {
  const auto flags = read_keyed_value("/proc/cpuinfo", "flags");
  if (!flags) return false;
  std::istringstream words(*flags);
  std::string word;
  while (words >> word) {
    if (word == flag) return true;
  }
  return false;
}

// The bracketed word of /sys/kernel/mm/transparent_hugepage/enabled ("always [madvise] never"), or
// null where the file is absent.
nlohmann::json transparent_hugepage_mode() {
  const auto line = read_first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!line) return nullptr;
  const std::size_t open = line->find('['), close = line->find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return *line;
  return line->substr(open + 1, close - open - 1);
}

std::string operating_system() {
  utsname name{};
  if (uname(&name) != 0) return "unknown";
  return std::string(name.sysname) + " " + name.release;
}

}  // namespace

nlohmann::json host_facts() {
  const CacheSizes caches = cache_sizes();
  const auto governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  return {
      {"cpu_model", read_keyed_value("/proc/cpuinfo", "model name").value_or("unknown")},
      {"logical_cores", static_cast<std::int64_t>(std::thread::hardware_concurrency())},
      {"usable_cpus", static_cast<std::int64_t>(usable_cpus())},
      {"caches",
       {{"l1d_bytes", bytes_or_null(caches.l1d)},
        {"l2_bytes", bytes_or_null(caches.l2)},
        {"l3_bytes", bytes_or_null(caches.l3)}}},
      {"memory_bytes", host_memory_bytes()},
      {"os", operating_system()},
      {"compiler", build_info::cxx_compiler},
      {"build_type", build_info::build_type},
      {"git_commit", build_info::git_commit},
      {"tool_version", build_info::tool_version},
      // A "powersave" or "ondemand" governor changes clocks under the benchmark; readers need it.
      {"frequency_governor", governor ? nlohmann::json(*governor) : nlohmann::json(nullptr)},
      // Under a hypervisor, cores and memory bandwidth may be shared with other guests.
      {"hypervisor", cpu_flag_present("hypervisor")},
      // The kernel's THP mode: with "always" or "madvise" the harness's buffers of 2 MiB and more are
      // backed by huge pages (cpu_backend.cpp); with "never" they are 4 KiB pages and large cells pay
      // TLB misses.
      {"transparent_hugepages", transparent_hugepage_mode()},
      {"huge_page_buffers", "buffers of 2 MiB and more: in whole 2 MiB pages, madvise(MADV_HUGEPAGE), touched at allocation, each at its own 256-byte multiple into its first page"},
  };
}

std::int64_t last_level_cache_bytes() {
  const CacheSizes caches = cache_sizes();
  if (caches.l3 > 0) return caches.l3;
  if (caches.l2 > 0) return caches.l2;
  return caches.l1d;
}

std::int64_t private_cache_bytes() {
  const CacheSizes caches = cache_sizes();
  return caches.l2 > 0 ? caches.l2 : caches.l1d;
}

std::int64_t host_memory_bytes() { return kib_value_bytes(read_keyed_value("/proc/meminfo", "MemTotal")); }

std::int64_t process_peak_rss_bytes() {
  return kib_value_bytes(read_keyed_value("/proc/self/status", "VmHWM"));
}

}  // namespace arch_bench
