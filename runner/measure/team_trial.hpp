#pragma once
// Whether a short CPU step runs faster on the whole OpenMP team or on one thread, measured before a
// visit's samples. A kernel splits a step over the team above a fixed size (parallel_policy.hpp),
// a size that pays when the team answers a fork/join in ~0.6 us. On a shared host the team answers
// in ~1.2 us or more for spells of seconds to minutes (results/shared-host-probes.md, "Team latency"), and a split decode
// step of 8 heads x 64 then loses to one thread: linear attention's split step, 2.0-2.2 us in the
// fast spells, took 3.1-4.7 us in the slow ones against 2.4-3.2 us on one thread. A kernel cannot
// tell the spell; the sampler can, by timing both.
#include <cstdint>
#include <functional>
#include <optional>

namespace arch_bench {

struct TeamTrial {
  int threads = 1;                   // what the visit's samples run on: the team, or 1
  std::int64_t pairs = 0;            // alternated pairs of blocks timed; 0 when the trial did not run
  double team_median_ms = 0;         // of the team's samples in the trial (0 when it did not run)
  double one_thread_median_ms = 0;   // of the one-thread samples
};

// A step slower than this keeps the team untried: a fork/join, even a slow spell's, is under 1%
// of it, and one-thread samples of a long step would cost the run more than they could tell.
inline constexpr double kTeamTrialMaxStepMs = 0.2;
// A team step longer than kTeamTrialMaxStepMs but shorter than this may be a team stall, not the
// step: one one-thread sample screens it. Stalls seen on the shared VMs reach a few hundred us.
inline constexpr double kTeamStallScreenMs = 2.0;

// Alternated pairs of blocks (one thread, then the team), each block one sample that is not kept
// and this many that are; the medians of the kept samples decide.
inline constexpr std::int64_t kTeamTrialPairs = 4;
inline constexpr std::int64_t kTeamTrialSamplesPerBlock = 3;

// One thread takes the samples only when its median is at least this much below the team's: at
// equal speed the team stays, so a step that does not split (below its kernel's threshold) or a
// noisy trial changes nothing.
inline constexpr double kOneThreadMargin = 0.05;

// `sample_ms(threads)` times one sample with the given team size (the caller sets it and restores
// the team afterwards). A team of one, or a step longer than kTeamTrialMaxStepMs, ends the trial
// (pairs = 0) and keeps the team. The step's length is `fastest_team_ms` when the caller has one
// (the fastest warmup call: a worker whose vCPU the host took away makes single calls take 100 us
// to milliseconds, and the screen must not mistake that for a long step), else one team sample.
// Otherwise kTeamTrialPairs pairs of blocks (one thread, then the team), and `threads` is 1 when one
// thread's median is at least kOneThreadMargin below the team's.
TeamTrial run_team_trial(int team, const std::function<double(int threads)>& sample_ms,
                         std::optional<double> fastest_team_ms = std::nullopt);

}  // namespace arch_bench
