// resolve_timing(): how a run's samples are timed, from the command line, the profile and the
// backend, and the combinations refused before anything is measured.
#include <gtest/gtest.h>

#include "runner/cli/run_options.hpp"
#include "core/errors.hpp"

namespace arch_bench {
namespace {

Profile cuda_profile(const std::string& method, std::int64_t steps) {
  Profile profile;
  profile.id = "TEST-CUDA";
  profile.backend = "cuda";
  profile.measurement.timing_method = method;
  profile.measurement.steps_per_sample = steps;
  return profile;
}

TimingPlan timing_for(const RunOptions& options, const Profile* profile, const std::string& backend,
                      ResolvedSettings* out = nullptr) {
  ResolvedSettings settings;
  resolve_timing(options, profile, backend, settings);
  if (out != nullptr) *out = settings;
  return settings.workload.timing;
}

TEST(RunTiming, BackendDefaultsAreSteadyClockOnTheCpuAndBatchedEventsOnTheGpu) {
  const RunOptions options;
  const TimingPlan cpu = timing_for(options, nullptr, "cpu");
  EXPECT_EQ(cpu.method, TimingMethod::steady_clock);
  EXPECT_EQ(cpu.steps_per_sample, 1);
  ResolvedSettings settings;
  const TimingPlan gpu = timing_for(options, nullptr, "cuda", &settings);
  EXPECT_EQ(gpu.method, TimingMethod::cuda_events_batched);
  EXPECT_EQ(gpu.steps_per_sample, 10);
  EXPECT_EQ(settings.sources["timing_method"], "backend_default");
}

TEST(RunTiming, TheProfileAppliesAndTheCommandLineWins) {
  const Profile profile = cuda_profile("cuda_graph", 25);
  RunOptions options;
  const TimingPlan from_profile = timing_for(options, &profile, "cuda");
  EXPECT_EQ(from_profile.method, TimingMethod::cuda_graph);
  EXPECT_EQ(from_profile.steps_per_sample, 25);
  options.timing = "cuda_events_batched";
  options.steps_per_sample = 4;
  options.given = {"timing", "steps_per_sample"};
  ResolvedSettings settings;
  const TimingPlan typed = timing_for(options, &profile, "cuda", &settings);
  EXPECT_EQ(typed.method, TimingMethod::cuda_events_batched);
  EXPECT_EQ(typed.steps_per_sample, 4);
  EXPECT_EQ(settings.sources["timing_method"], "command_line");
  EXPECT_EQ(settings.sources["steps_per_sample"], "command_line");
}

TEST(RunTiming, AnOlderProfileSayingCudaEventsWithABatchMeansBatchedEvents) {
  const Profile profile = cuda_profile("cuda_events", 10);
  const TimingPlan timing = timing_for(RunOptions{}, &profile, "cuda");
  EXPECT_EQ(timing.method, TimingMethod::cuda_events_batched);
  EXPECT_EQ(timing.steps_per_sample, 10);
}

TEST(RunTiming, SingleLaunchEventsTimeOneStep) {
  RunOptions options;
  options.timing = "cuda_events";
  options.given = {"timing"};
  EXPECT_EQ(timing_for(options, nullptr, "cuda").steps_per_sample, 1);
  options.steps_per_sample = 5;
  options.given.insert("steps_per_sample");
  EXPECT_THROW(timing_for(options, nullptr, "cuda"), UsageError);
}

TEST(RunTiming, MethodsOfTheOtherBackendAndBadValuesAreRefused) {
  RunOptions options;
  options.given = {"timing"};
  for (const char* method : {"cuda_events", "cuda_events_batched", "cuda_graph"}) {
    options.timing = method;
    EXPECT_THROW(timing_for(options, nullptr, "cpu"), UsageError) << method;
  }
  options.timing = "steady_clock";
  EXPECT_THROW(timing_for(options, nullptr, "cuda"), UsageError);
  options.timing = "wallclock";
  EXPECT_THROW(timing_for(options, nullptr, "cpu"), UsageError);
  RunOptions steps;
  steps.steps_per_sample = 0;
  steps.given = {"steps_per_sample"};
  EXPECT_THROW(timing_for(steps, nullptr, "cpu"), UsageError);
}

}  // namespace
}  // namespace arch_bench
