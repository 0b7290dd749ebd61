#include "runner/measure/sampler.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace arch_bench {

namespace {

// Calls `progress` when `done` crosses a tenth of `total` and once at the end, so a long cell
// shows movement without the callback (terminal I/O) running between every pair of samples.
class ProgressTicker {
 public:
  ProgressTicker(const SampleProgress& progress, std::int64_t total)
      : progress_(progress), total_(total), stride_(std::max<std::int64_t>(1, (total + 9) / 10)) {}
  void tick(std::int64_t done) const {
    if (progress_ && (done % stride_ == 0 || done == total_)) progress_(done, total_);
  }

 private:
  const SampleProgress& progress_;
  std::int64_t total_;
  std::int64_t stride_;
};

}  // namespace

MeasuredSamples measure_cell(PreparedCell& cell, Backend& backend, std::int64_t warmup,
                             std::int64_t repeats, CacheState cache,
                             const SampleProgress& progress) {
  if (warmup < 0) {
    throw std::invalid_argument("warmup must be >= 0 (got " + std::to_string(warmup) + ")");
  }
  if (repeats < 1) {
    throw std::invalid_argument("repeats must be >= 1 (got " + std::to_string(repeats) + ")");
  }
  const std::int64_t total = warmup + repeats;
  const ProgressTicker ticker(progress, total);
  // Built once: constructing a std::function per sample would put that cost next to the timer.
  const std::function<void()> work = [&cell] { cell.run(); };

  MeasuredSamples measured;
  measured.samples_ms.reserve(static_cast<std::size_t>(repeats));
  Allocator& allocator = backend.allocator();
  const std::int64_t allocations_before = allocator.allocation_count();

  std::int64_t done = 0;
  for (std::int64_t i = 0; i < warmup; ++i) {
    cell.run();
    ticker.tick(++done);
  }
  for (std::int64_t i = 0; i < repeats; ++i) {
    if (cache == CacheState::cold) {
      // Asked for every sample rather than once: a cell may reallocate a buffer inside run(),
      // and flushing a stale span would touch freed memory.
      const std::vector<ByteSpan> buffers = cell.buffers();
      backend.evict(buffers);
    }
    measured.samples_ms.push_back(backend.time_ms(work));
    ticker.tick(++done);
  }

  measured.allocations_during_timing = allocator.allocation_count() - allocations_before;
  return measured;
}

}  // namespace arch_bench
