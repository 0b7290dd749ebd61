#include "runner/measure/team_check.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace arch_bench {

namespace {
volatile int g_checked_in = 0;  // keeps the region from being optimised away
}  // namespace

std::optional<double> team_check_us() {
  if (omp_get_max_threads() < 2) return std::nullopt;
  const auto start = std::chrono::steady_clock::now();
  int entered = 0;
#pragma omp parallel reduction(+ : entered)
  entered += 1;
  const auto end = std::chrono::steady_clock::now();
  g_checked_in = entered;
  return std::chrono::duration<double, std::micro>(end - start).count();
}

std::int64_t count_team_stalls(const std::vector<double>& checks_us) {
  return std::count_if(checks_us.begin(), checks_us.end(), [](double us) { return us > kTeamStallUs; });
}

}  // namespace arch_bench
