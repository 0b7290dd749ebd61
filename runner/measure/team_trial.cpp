#include "runner/measure/team_trial.hpp"

#include <algorithm>
#include <vector>

#include "runner/measure/statistics.hpp"

namespace arch_bench {

TeamTrial run_team_trial(int team, const std::function<double(int threads)>& sample_ms,
                         std::optional<double> fastest_team_ms) {
  TeamTrial trial;
  trial.threads = team;
  if (team < 2) return trial;
  // A screening sample is not kept: it follows the warmup, whose last step may have left the team
  // in a different state than the alternation below does.
  double step_ms = fastest_team_ms ? *fastest_team_ms : sample_ms(team);
  // A slow team spell (fork/join near 200 us on a busy 2-vCPU VM, run 20 of the ggml log) makes a
  // step of a few microseconds look long; one one-thread sample tells whether the step itself is.
  if (step_ms > kTeamTrialMaxStepMs && step_ms < kTeamStallScreenMs) step_ms = std::min(step_ms, sample_ms(1));
  if (step_ms > kTeamTrialMaxStepMs) return trial;
  std::vector<double> one_thread, whole_team;
  // Blocks of samples, not single ones: a step's state moves to the caches of whichever threads ran
  // it, so the first step after a switch pays for moving it (on the 2-vCPU VM one thread took
  // 2.7-4.8 us right after the team's steps against 2.4 us on its own) and is not kept.
  const auto block = [&](int threads, std::vector<double>& kept) {
    sample_ms(threads);
    for (std::int64_t i = 0; i < kTeamTrialSamplesPerBlock; ++i) kept.push_back(sample_ms(threads));
  };
  for (std::int64_t i = 0; i < kTeamTrialPairs; ++i) {
    block(1, one_thread);
    block(team, whole_team);
  }
  trial.pairs = kTeamTrialPairs;
  trial.team_median_ms = summarize(whole_team).median;
  trial.one_thread_median_ms = summarize(one_thread).median;
  if (trial.one_thread_median_ms <= trial.team_median_ms * (1.0 - kOneThreadMargin)) trial.threads = 1;
  return trial;
}

}  // namespace arch_bench
