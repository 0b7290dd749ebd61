#include "runner/cli/omp_spin_policy.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace arch_bench {

bool runs_openmp_teams(const std::vector<std::string>& words) {
  if (words.empty()) return false;
  const std::string& command = words.front();
  return command == "run" || command == "conformance" || command == "preflight";
}

SpinChoice choose_omp_spin(bool measuring, std::optional<int> other_runnable, int cpus) {
  if (!measuring) return {kBoundedSpinCount, "bounded spin: not a measuring command"};
  if (!other_runnable) return {kBoundedSpinCount, "bounded spin: the machine's load is unknown (no /proc/stat)"};
  if (*other_runnable > 0) {
    return {kBoundedSpinCount, fmt::format("bounded spin: {} other runnable task(s) on {} CPU(s) at the start",
                                           *other_runnable, cpus)};
  }
  return {kMeasuringSpinCount, "spin while measuring: no other runnable task at the start"};
}

namespace {

std::optional<int> procs_running() {
  std::ifstream stat("/proc/stat");
  std::string line;
  while (std::getline(stat, line)) {
    if (line.rfind("procs_running ", 0) != 0) continue;
    std::istringstream fields(line.substr(14));
    int count = 0;
    if (fields >> count) return count;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> other_runnable_tasks(int readings) {
  std::vector<int> others;
  for (int i = 0; i < readings; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::optional<int> running = procs_running();
    if (!running) return std::nullopt;
    others.push_back(std::max(0, *running - 1));  // this process is running while it reads
  }
  if (others.empty()) return std::nullopt;
  std::nth_element(others.begin(), others.begin() + others.size() / 2, others.end());
  return others[others.size() / 2];
}

std::string omp_wait_policy_in_effect() {
  if (const char* policy = std::getenv("OMP_WAIT_POLICY")) return policy;
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  if (spin == nullptr) return "unset";
  const char* reason = std::getenv(kSpinReasonVariable);
  if (reason == nullptr) return fmt::format("GOMP_SPINCOUNT={} (set by the user)", spin);
  return fmt::format("{} (GOMP_SPINCOUNT={})", reason, spin);
}

}  // namespace arch_bench
