// The team trial (runner/measure/team_trial.hpp): which team size takes a visit's samples, from
// scripted sample times, and how measure_cell runs the samples and probes around it. The times are
// scripted, so these tests check the choice and the bookkeeping, never how long anything took.
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <omp.h>

#include "mechanisms/registry.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "core/dtype.hpp"
#include "runner/measure/sampler.hpp"
#include "runner/measure/team_trial.hpp"
#include "runner/modes/mode.hpp"
#include "runner/report/team_trial_note.hpp"

namespace arch_bench {
namespace {

// Answers sample_ms(threads) from a fixed time per team size and logs every call's team size.
struct ScriptedSteps {
  explicit ScriptedSteps(double one_thread = 0.002, double team = 0.002) : one_thread_ms(one_thread), team_ms(team) {}
  double one_thread_ms, team_ms;
  std::vector<int> calls;
  double operator()(int threads) {
    calls.push_back(threads);
    return threads == 1 ? one_thread_ms : team_ms;
  }
};

TeamTrial trial_of(int team, ScriptedSteps& steps) {
  return run_team_trial(team, [&](int threads) { return steps(threads); });
}

TEST(TeamTrial, OneThreadTakesTheSamplesWhenItIsFasterByTheMargin) {
  ScriptedSteps steps(0.0024, 0.0038);  // a slow spell's split step
  const TeamTrial trial = trial_of(2, steps);
  EXPECT_EQ(trial.threads, 1);
  EXPECT_EQ(trial.pairs, kTeamTrialPairs);
  EXPECT_DOUBLE_EQ(trial.one_thread_median_ms, 0.0024);
  EXPECT_DOUBLE_EQ(trial.team_median_ms, 0.0038);
  // The screening sample, then per pair a block of one thread and a block of the team, each one
  // sample not kept and kTeamTrialSamplesPerBlock kept.
  std::vector<int> expected{2};
  for (std::int64_t pair = 0; pair < kTeamTrialPairs; ++pair) {
    expected.insert(expected.end(), kTeamTrialSamplesPerBlock + 1, 1);
    expected.insert(expected.end(), kTeamTrialSamplesPerBlock + 1, 2);
  }
  EXPECT_EQ(steps.calls, expected);
}

TEST(TeamTrial, TheTeamStaysAtEqualSpeedAndWithinTheMargin) {
  for (const double one_thread_ms : {0.002, 0.0021, 0.002 * (1.0 - kOneThreadMargin / 2)}) {
    ScriptedSteps steps(one_thread_ms, 0.002);
    EXPECT_EQ(trial_of(4, steps).threads, 4) << one_thread_ms;
  }
  ScriptedSteps faster(0.002 * (1.0 - 2 * kOneThreadMargin), 0.002);
  EXPECT_EQ(trial_of(4, faster).threads, 1);
}

TEST(TeamTrial, ALongStepOrATeamOfOneIsNotTried) {
  ScriptedSteps long_step(kTeamTrialMaxStepMs * 2, kTeamTrialMaxStepMs * 1.5);
  const TeamTrial kept = trial_of(2, long_step);
  EXPECT_EQ(kept.threads, 2);
  EXPECT_EQ(kept.pairs, 0);
  EXPECT_EQ(long_step.calls, (std::vector<int>{2, 1}));  // the team's and one thread's screening, then nothing

  // Far beyond any team stall: no one-thread sample is spent on it.
  ScriptedSteps very_long(kTeamStallScreenMs * 2, kTeamStallScreenMs * 1.5);
  EXPECT_EQ(trial_of(2, very_long).pairs, 0);
  EXPECT_EQ(very_long.calls, std::vector<int>{2});

  ScriptedSteps alone;
  const TeamTrial single = trial_of(1, alone);
  EXPECT_EQ(single.threads, 1);
  EXPECT_EQ(single.pairs, 0);
  EXPECT_TRUE(alone.calls.empty());
}

// The warmup's fastest call screens when there is one: no screening sample is taken, a stalled
// sample cannot make a short step look long, and a long step is still left alone.
TEST(TeamTrial, TheFastestWarmupCallScreensInsteadOfASample) {
  ScriptedSteps stalled(0.0024, 0.0038);
  const TeamTrial trial = run_team_trial(2, [&](int threads) { return stalled(threads); }, 0.0035);
  EXPECT_EQ(trial.threads, 1);
  EXPECT_EQ(stalled.calls.size(), static_cast<std::size_t>(2 * kTeamTrialPairs * (kTeamTrialSamplesPerBlock + 1)));
  EXPECT_EQ(stalled.calls.front(), 1);  // straight to the first one-thread block

  ScriptedSteps long_step(0.001, 0.001);
  const TeamTrial kept = run_team_trial(2, [&](int threads) { return long_step(threads); }, kTeamStallScreenMs * 2);
  EXPECT_EQ(kept.threads, 2);
  EXPECT_EQ(kept.pairs, 0);
  EXPECT_TRUE(long_step.calls.empty());
}

// A team stall (200 us of fork/join) makes a 4 us step read as long with the team: the one-thread
// screening sample shows the step is short, so the trial runs and one thread takes the samples.
TEST(TeamTrial, ATeamStallDoesNotHideAShortStep) {
  ScriptedSteps stalled(0.004, 0.205);
  const TeamTrial trial = trial_of(2, stalled);
  EXPECT_EQ(trial.pairs, kTeamTrialPairs);
  EXPECT_EQ(trial.threads, 1);
  EXPECT_EQ(stalled.calls[0], 2);
  EXPECT_EQ(stalled.calls[1], 1);
}

// The first sample after a switch of team size pays for moving the state between the threads'
// caches; it is timed but not kept, so a 10x first step changes neither median.
TEST(TeamTrial, TheFirstSampleOfEveryBlockIsNotKept) {
  int last = 0;
  std::vector<int> calls;
  const TeamTrial trial = run_team_trial(2, [&](int threads) {
    const bool switched = threads != last;
    last = threads;
    calls.push_back(threads);
    const double steady = threads == 1 ? 0.0030 : 0.0020;
    return switched && calls.size() > 1 ? steady * 10 : steady;
  });
  EXPECT_EQ(trial.threads, 2);
  EXPECT_DOUBLE_EQ(trial.one_thread_median_ms, 0.0030);
  EXPECT_DOUBLE_EQ(trial.team_median_ms, 0.0020);
}

Row trial_row(const std::string& mechanism, std::int64_t length, std::optional<std::int64_t> one_thread_samples) {
  Row row;
  row.cell.mechanism = mechanism;
  row.cell.sequence_length = length;
  row.samples_ms.assign(40, 0.003);
  row.one_thread_samples = one_thread_samples;
  row.trial_team_median_us = 4.2;
  row.trial_one_thread_median_us = 2.8;
  return row;
}

// The run's note names the rows that ran on one thread, with their counts and trial medians, and
// says nothing when none did (or no trial ran).
TEST(TeamTrialNote, NamesTheRowsThatRanOnOneThread) {
  EXPECT_FALSE(team_trial_note(std::vector<Row>{trial_row("mamba", 512, 0), trial_row("rwkv7", 512, std::nullopt)}));
  std::vector<Row> rows{trial_row("linear_attention", 2048, 40), trial_row("mamba", 2048, 0)};
  for (int i = 0; i < 5; ++i) rows.push_back(trial_row("rwkv6", 512 << i, 10));
  const std::optional<std::string> note = team_trial_note(rows);
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->find("team trial: 6 of 7 row(s) took samples on one thread"), 0u) << *note;
  EXPECT_NE(note->find("linear_attention decode L=2048 (40 of 40 samples; trial 2.80 vs 4.20 us)"), std::string::npos)
      << *note;
  EXPECT_EQ(note->find("mamba"), std::string::npos) << *note;
  EXPECT_NE(note->find(", and 2 more"), std::string::npos) << *note;
}

// A CPU backend whose clock says how many threads the timed call was given: 2 us on one thread,
// 4 us on more (a slow spell's split step), so the trial must choose one thread.
class TeamSizedClock final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Allocator& allocator() override { return allocator_; }
  double time_ms(const std::function<void()>& work) override {
    work();
    timed_team_sizes.push_back(omp_get_max_threads());
    return timed_team_sizes.back() == 1 ? 0.002 : 0.004;
  }
  void evict(std::span<const ByteSpan>) override {}
  nlohmann::json facts() const override { return nlohmann::json::object(); }
  std::vector<int> timed_team_sizes;

 private:
  class Heap final : public Allocator {
   protected:
    void* raw_allocate(std::size_t bytes) override { return std::malloc(bytes == 0 ? 1 : bytes); }
    void raw_deallocate(void* pointer, std::size_t) noexcept override { std::free(pointer); }
  } allocator_;
};

class EmptyCell final : public PreparedCell {
 public:
  void run() override {}
  Accuracy check() const override { return {}; }
  std::vector<ByteSpan> buffers() const override { return {}; }
};

class TeamOfTwo : public ::testing::Test {
 protected:
  void SetUp() override { omp_set_num_threads(2); }
  void TearDown() override { omp_set_num_threads(threads_before_); }

 private:
  int threads_before_ = omp_get_max_threads();
};

TEST_F(TeamOfTwo, SamplesRunOnTheTrialsChoiceAndTheProbesOnTheWholeTeam) {
  TeamSizedClock backend;
  EmptyCell cell;
  const MeasuredSamples measured = measure_cell(cell, backend, 1, 5, CacheState::hot, {}, {}, true);
  ASSERT_TRUE(measured.team_trial.has_value());
  EXPECT_EQ(measured.team_trial->threads, 1);
  EXPECT_EQ(measured.one_thread_samples, 5);
  EXPECT_EQ(measured.samples_ms, std::vector<double>(5, 0.002));
  // The probes still read the team of two after every one-thread sample, and the team is whole again.
  EXPECT_EQ(measured.team_checks_us.size(), 5u);
  EXPECT_EQ(measured.contention_ratios.size(), 5u);
  EXPECT_EQ(omp_get_max_threads(), 2);
}

TEST_F(TeamOfTwo, WithoutTheTrialEverySampleRunsOnTheTeam) {
  TeamSizedClock backend;
  EmptyCell cell;
  const MeasuredSamples measured = measure_cell(cell, backend, 1, 5, CacheState::hot, {}, {}, false);
  EXPECT_FALSE(measured.team_trial.has_value());
  EXPECT_EQ(measured.one_thread_samples, 0);
  EXPECT_EQ(backend.timed_team_sizes, std::vector<int>(5, 2));
}

// The trial runs a cell prepared for the team on one thread: every landscape mechanism's step, decode
// and prefill, stays within its dtype's tolerance of the fp64 reference run that way (a kernel that
// sized its work by the team at prepare time and indexed it by thread would leave parts unwritten).
TEST_F(TeamOfTwo, EveryMechanismPreparedForTheTeamIsRightOnOneThread) {
  CpuBackend backend;
  const Mode* landscape = find_mode("landscape");
  ASSERT_NE(landscape, nullptr);
  for (const Arm& arm : landscape->arms(landscape->defaults().workload)) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      Cell cell;
      cell.mechanism = arm.mechanism;
      cell.options = arm.options;
      cell.phase = phase;
      cell.sequence_length = 80;
      cell.dtype = DType::float32;
      const Mechanism* mechanism = find_mechanism(arm.mechanism);
      ASSERT_NE(mechanism, nullptr) << arm.mechanism;
      const auto prepared = mechanism->prepare(cell, 7, backend);
      omp_set_num_threads(1);
      prepared->run();
      omp_set_num_threads(2);
      const Accuracy accuracy = prepared->check();
      EXPECT_TRUE(accuracy.output_finite) << arm.mechanism << " " << phase_name(phase);
      EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(DType::float32)) << arm.mechanism << " " << phase_name(phase);
    }
  }
}

}  // namespace
}  // namespace arch_bench
