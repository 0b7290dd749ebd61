#pragma once
// Sampling one prepared cell: untimed warmup, then timed repeats on the backend's timer, with the
// caches made cold before each timed sample when the workload asks for it.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "mechanisms/mechanism.hpp"
#include "core/backends/backend.hpp"
#include "runner/pipeline/workload.hpp"
#include "runner/measure/team_trial.hpp"

namespace arch_bench {

struct MeasuredSamples {
  std::vector<double> samples_ms;  // one per timed repeat (elapsed / steps_per_sample), in order
  // Allocator calls made during warmup + repeats; a decode step should make none.
  std::int64_t allocations_during_timing = 0;
  // CPU backend: team_contention_ratio() taken just before each timed sample (empty otherwise).
  std::vector<double> contention_ratios;
  // CPU backend: MemoryProbe::read_gbps() taken just before each timed sample, flushed for a cold
  // cache and warm for a hot cell whose buffers exceed the team's private caches (empty for a hot cell
  // that fits them: the probe's reads would evict part of its working set; memory_probe.hpp).
  std::vector<double> memory_gbps;
  // CPU backend, team of two or more: team_check_us() taken just after each timed sample.
  std::vector<double> team_checks_us;
  // CPU, team of two or more, team trial asked for: what it measured, and how many samples then ran
  // on one thread (all of them or none).
  std::optional<TeamTrial> team_trial;
  std::int64_t one_thread_samples = 0;
};

// Reports (calls of run() done, warmup + repeats) every tenth of the way and at the end.
using SampleProgress = std::function<void(std::int64_t done, std::int64_t total)>;

// Runs `warmup` untimed calls of cell.run(), then `repeats` timed samples, each of
// timing.steps_per_sample calls, through backend.make_timer(). CacheState::cold evicts
// cell.buffers() before every timed sample, outside the timed region; hot does nothing extra.
// `progress` may be empty; it is called at most ~10 times. Throws std::invalid_argument when
// warmup < 0 or repeats < 1, and CellFailure("interrupted") when a stop was requested
// (runner/pipeline/interrupt.hpp) between samples. `team_trial` (CPU, a team of two or more): before
// the samples, run_team_trial() times the step on the whole team and on one thread, and the samples
// run on the faster (team_trial.hpp); the team is restored when the call returns or throws.
MeasuredSamples measure_cell(PreparedCell& cell, Backend& backend, std::int64_t warmup,
                             std::int64_t repeats, CacheState cache,
                             const SampleProgress& progress = {}, const TimingPlan& timing = {},
                             bool team_trial = false);

// What launching costs per timed unit: the median per-step time of `steps` back-to-back launches
// between events minus that of the same steps replayed from a CUDA graph, over `samples` hot
// samples of each. nullopt when the backend cannot time both ways (the CPU).
std::optional<double> measure_launch_overhead_ms(PreparedCell& cell, Backend& backend, std::int64_t steps,
                                                 std::int64_t samples);

}  // namespace arch_bench
