#include "runner/measure/sampler.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <omp.h>

#include "core/errors.hpp"
#include "runner/pipeline/interrupt.hpp"
#include "runner/measure/contention.hpp"
#include "runner/measure/memory_probe.hpp"
#include "runner/measure/statistics.hpp"
#include "runner/measure/team_check.hpp"
#include "runner/measure/team_trial.hpp"

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

void stop_if_interrupted(std::int64_t done, std::int64_t total) {
  if (interrupt_requested()) {
    throw CellFailure("interrupted", fmt::format("interrupted by signal {} after {} of {} calls (warmup + "
                                                 "samples); the cell was not finished",
                                                 interrupt_signal(), done, total));
  }
}

// Puts the OpenMP team back to its size when a visit ends, thrown out of or not: the samples may
// run on fewer threads (the team trial), every probe and every later cell on the whole team.
class TeamSizeGuard {
 public:
  explicit TeamSizeGuard(int team) : team_(team) {}
  TeamSizeGuard(const TeamSizeGuard&) = delete;
  TeamSizeGuard& operator=(const TeamSizeGuard&) = delete;
  ~TeamSizeGuard() { omp_set_num_threads(team_); }

 private:
  int team_;
};

std::int64_t buffer_bytes(const PreparedCell& cell) {
  std::int64_t bytes = 0;
  for (const ByteSpan& span : cell.buffers()) bytes += static_cast<std::int64_t>(span.size());
  return bytes;
}

}  // namespace

MeasuredSamples measure_cell(PreparedCell& cell, Backend& backend, std::int64_t warmup,
                             std::int64_t repeats, CacheState cache,
                             const SampleProgress& progress, const TimingPlan& timing, bool team_trial) {
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
  // The fastest warmup call on the host's clock: what the team trial screens long steps by (only
  // read on the CPU, where a call returns when its work is done).
  std::optional<double> fastest_warmup_ms;
  for (std::int64_t i = 0; i < warmup; ++i) {
    const auto start = std::chrono::steady_clock::now();
    cell.run();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    fastest_warmup_ms = std::min(ms, fastest_warmup_ms.value_or(ms));
    ticker.tick(++done);
    if (i % 16 == 15) stop_if_interrupted(done, total);
  }
  backend.synchronize();
  // After warmup: a CUDA graph is captured here (it records launches, it runs nothing).
  const std::unique_ptr<SampleTimer> timer = backend.make_timer(work, timing);
  const double steps = static_cast<double>(timing.steps_per_sample);
  const bool on_cpu = backend.name() == "cpu";  // the host probes and the team wake-up
  if (on_cpu) measured.contention_ratios.reserve(static_cast<std::size_t>(repeats));
  // The host's memory rate before each sample, on the whole team (memory_probe.hpp): flushed for a
  // cold cell; warm for a hot one that streams past the private caches.
  std::optional<TeamMemoryProbe> memory_probe;
  if (on_cpu && cache == CacheState::cold) {
    memory_probe.emplace(MemoryProbe::Reading::flushed);
  } else if (on_cpu && hot_cell_streams_past_private_caches(buffer_bytes(cell), omp_get_max_threads())) {
    memory_probe.emplace(MemoryProbe::Reading::warm, warm_probe_bytes());
  }
  if (memory_probe) measured.memory_gbps.reserve(static_cast<std::size_t>(repeats));
  // Only the timed call runs on `threads`; the probes around it read the whole team.
  const int team = omp_get_max_threads();
  const TeamSizeGuard restore_team(team);
  const auto timed_sample_ms = [&](int threads) {
    if (threads == team) return timer->sample_ms() / steps;
    omp_set_num_threads(threads);
    const double ms = timer->sample_ms() / steps;
    omp_set_num_threads(team);
    return ms;
  };
  int sample_threads = team;
  if (on_cpu && team_trial && team >= 2) {
    // The trial's samples as the visit's are taken: evicted when cold, each after a team wake-up
    // (the probe before every sample below is one), so both sides start from the state the samples do.
    // A cold cell's warmup ran with warm caches, faster than its samples: screen by a sample.
    const std::optional<double> screened_ms = cache == CacheState::hot ? fastest_warmup_ms : std::nullopt;
    measured.team_trial = run_team_trial(
        team,
        [&](int threads) {
          if (cache == CacheState::cold) backend.evict(cell.buffers());
          team_check_us();
          return timed_sample_ms(threads);
        },
        screened_ms);
    sample_threads = measured.team_trial->threads;
  }
  for (std::int64_t i = 0; i < repeats; ++i) {
    stop_if_interrupted(done, total);
    // Before the eviction, so that whatever the probe's read displaced, the cell's buffers are then
    // flushed as always.
    if (memory_probe) measured.memory_gbps.push_back(memory_probe->read_gbps());
    if (cache == CacheState::cold) {
      // Asked for every sample rather than once: a cell may reallocate a buffer inside run(),
      // and flushing a stale span would touch freed memory.
      const std::vector<ByteSpan> buffers = cell.buffers();
      backend.evict(buffers);
    }
    // Registers only: it neither warms nor evicts the cell's buffers. Its parallel region is also the
    // team's wake-up: under the bounded spin (a run that found the machine busy, or a user's
    // GOMP_SPINCOUNT; runner/cli/omp_spin_policy.hpp) the workers sleep once they have spun ~100 us
    // without work, and what runs between two samples (a cold eviction: clflush of every line of
    // the cell, 0.4-2 ms at 16 MiB; the memory probe, ~50-100 us) can be longer, so the sample's
    // first parallel region would pay the futex wake of every worker inside the timed region (~94 us
    // on this 2-vCPU VM, 150-600 us when the host is busy, against 5-20 us for a split decode step).
    // Just after the probe the team is spinning when the sample starts.
    if (on_cpu) measured.contention_ratios.push_back(team_contention_ratio());
    measured.samples_ms.push_back(timed_sample_ms(sample_threads));
    if (sample_threads < team) ++measured.one_thread_samples;
    // Just after, while the team still spins: a worker that does not answer at once was not running.
    if (on_cpu) {
      if (const std::optional<double> check = team_check_us()) measured.team_checks_us.push_back(*check);
    }
    ticker.tick(++done);
  }

  measured.allocations_during_timing = allocator.allocation_count() - allocations_before;
  return measured;
}

std::optional<double> measure_launch_overhead_ms(PreparedCell& cell, Backend& backend, std::int64_t steps,
                                                 std::int64_t samples) {
  if (backend.name() != "cuda" || steps < 1 || samples < 1) return std::nullopt;
  const std::function<void()> work = [&cell] { cell.run(); };
  const auto batched = backend.make_timer(work, {TimingMethod::cuda_events_batched, steps});
  const auto graph = backend.make_timer(work, {TimingMethod::cuda_graph, steps});
  std::vector<double> batched_ms, graph_ms;
  // Interleaved, so a clock or thermal drift during the series affects both alike.
  for (std::int64_t i = 0; i < samples; ++i) {
    batched_ms.push_back(batched->sample_ms() / static_cast<double>(steps));
    graph_ms.push_back(graph->sample_ms() / static_cast<double>(steps));
  }
  return summarize(batched_ms).median - summarize(graph_ms).median;
}

}  // namespace arch_bench
