#pragma once
// Sampling one prepared cell: untimed warmup, then timed repeats on the backend's clock, with the
// caches made cold before each timed sample when the workload asks for it.
#include <cstdint>
#include <functional>
#include <vector>

#include "mechanisms/mechanism.hpp"
#include "runner/backends/backend.hpp"
#include "runner/core/workload.hpp"

namespace arch_bench {

struct MeasuredSamples {
  std::vector<double> samples_ms;  // one per timed repeat, in order
  // Allocator calls made during warmup + repeats; a decode step should make none.
  std::int64_t allocations_during_timing = 0;
};

// Reports (calls of run() done, warmup + repeats) every tenth of the way and at the end.
using SampleProgress = std::function<void(std::int64_t done, std::int64_t total)>;

// Runs `warmup` untimed calls of cell.run(), then `repeats` timed ones via backend.time_ms.
// CacheState::cold evicts cell.buffers() before every timed sample, outside the timed region;
// hot does nothing extra. `progress` may be empty; it is called at most ~10 times.
// Throws std::invalid_argument when warmup < 0 or repeats < 1.
MeasuredSamples measure_cell(PreparedCell& cell, Backend& backend, std::int64_t warmup,
                             std::int64_t repeats, CacheState cache,
                             const SampleProgress& progress = {});

}  // namespace arch_bench
