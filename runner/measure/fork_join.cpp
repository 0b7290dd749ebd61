#include "runner/measure/fork_join.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

namespace arch_bench {

double measure_omp_fork_join_us(int threads, int samples) {
  if (samples < 1 || threads < 1) throw std::invalid_argument("fork/join probe needs samples >= 1 and threads >= 1");
  using Clock = std::chrono::steady_clock;
  std::vector<double> us(static_cast<std::size_t>(samples));
  int entered = 0;
  for (double& sample : us) {
    const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : entered)
    entered += 1;
    sample = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  }
  if (entered < samples) throw std::logic_error("fork/join probe: a region ran no thread");
  std::nth_element(us.begin(), us.begin() + samples / 2, us.end());
  return us[static_cast<std::size_t>(samples / 2)];
}

}  // namespace arch_bench
