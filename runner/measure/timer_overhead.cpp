#include "runner/measure/timer_overhead.hpp"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runner/measure/statistics.hpp"

namespace arch_bench {

double measure_timer_overhead_ms(Backend& backend, int samples) {
  if (samples < 1) {
    throw std::invalid_argument("timer overhead needs at least one sample (got " +
                                std::to_string(samples) + ")");
  }
  // The same std::function path the sampler uses, so the call through it is counted too.
  const std::function<void()> nothing = [] {};
  std::vector<double> times(static_cast<std::size_t>(samples));
  for (double& t : times) t = backend.time_ms(nothing);
  // Median, not mean: an interrupt or a page fault in one sample says nothing about the clock.
  return summarize(times).median;
}

}  // namespace arch_bench
