#pragma once
// What the harness itself adds to every sample: the backend's clock around an empty callable.
// Reported next to the samples so a step that is close to it is read with suspicion.
#include "core/backends/backend.hpp"

namespace arch_bench {

// Median of `samples` backend.time_ms() calls of an empty callable, in milliseconds.
// Throws std::invalid_argument when samples < 1.
double measure_timer_overhead_ms(Backend& backend, int samples = 2000);

}  // namespace arch_bench
