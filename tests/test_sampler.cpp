// measure_cell() and measure_timer_overhead_ms() against a fake backend whose clock is scripted,
// so the tests check what is called, in which order and what is counted, never how long it took.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <omp.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "core/errors.hpp"
#include "runner/pipeline/interrupt.hpp"
#include "runner/measure/contention.hpp"
#include "runner/measure/sampler.hpp"
#include "runner/measure/fork_join.hpp"
#include "runner/measure/team_check.hpp"
#include "runner/measure/timer_overhead.hpp"

namespace arch_bench {
namespace {

using EventLog = std::vector<std::string>;

class MallocAllocator final : public Allocator {
 protected:
  void* raw_allocate(std::size_t bytes) override { return std::malloc(bytes == 0 ? 1 : bytes); }
  void raw_deallocate(void* pointer, std::size_t) noexcept override { std::free(pointer); }
};

// Clock returns 1, 2, 3, ... ms; logs "timed" when a timed region opens and each evict().
class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(EventLog& log) : log_(log) {}
  std::string name() const override { return "fake"; }
  Allocator& allocator() override { return allocator_; }
  double time_ms(const std::function<void()>& work) override {
    log_.push_back("timed");
    work();
    return static_cast<double>(++timed_calls);
  }
  void evict(std::span<const ByteSpan> buffers) override {
    log_.push_back("evict");
    evicted.emplace_back(buffers.begin(), buffers.end());
  }
  nlohmann::json facts() const override { return nlohmann::json::object(); }

  std::int64_t timed_calls = 0;
  std::vector<std::vector<ByteSpan>> evicted;

 private:
  EventLog& log_;
  MallocAllocator allocator_;
};

class FakeCell final : public PreparedCell {
 public:
  FakeCell(EventLog& log, Allocator& allocator, bool allocate_in_run)
      : log_(log), allocator_(allocator), allocate_in_run_(allocate_in_run),
        state_(allocator, 256) {}
  void run() override {
    log_.push_back("run");
    ++runs;
    if (allocate_in_run_) Buffer<float> scratch(allocator_, 8);
  }
  Accuracy check() const override { return {}; }
  std::vector<ByteSpan> buffers() const override { return {state_.byte_span()}; }

  std::int64_t runs = 0;
  ByteSpan state() const { return state_.byte_span(); }

 private:
  EventLog& log_;
  Allocator& allocator_;
  bool allocate_in_run_;
  Buffer<float> state_;
};

struct Harness {
  EventLog log;
  FakeBackend backend{log};
  FakeCell cell;
  explicit Harness(bool allocate_in_run = false)
      : cell(log, backend.allocator(), allocate_in_run) {}
};

// A check over the stall bound counts, one at or under it does not; the bound is absolute, so a row
// stalled throughout counts every sample.
TEST(TeamCheck, CountsChecksOverTheStallBound) {
  EXPECT_EQ(count_team_stalls({}), 0);
  EXPECT_EQ(count_team_stalls({1.0, 0.8, kTeamStallUs, 94.0}), 0);
  EXPECT_EQ(count_team_stalls({1.0, kTeamStallUs + 1.0, 2.0, 3000.0, 1.2}), 2);
  EXPECT_EQ(count_team_stalls({400.0, 600.0, 500.0}), 3);
}

// The check itself: nothing to wait for in a team of one; with two threads, a positive finite time.
TEST(TeamCheck, TimesATeamOfTwoAndSkipsATeamOfOne) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  EXPECT_FALSE(team_check_us().has_value());
  omp_set_num_threads(2);
  const std::optional<double> check = team_check_us();
  omp_set_num_threads(threads);
  ASSERT_TRUE(check.has_value());
  EXPECT_GT(*check, 0.0);
  EXPECT_TRUE(std::isfinite(*check));
}

// Both chains of the contention probe do their work: a chain the compiler folded away, or a loop
// that never read its addends, would time as nothing and read ~0 or a huge ratio. Uncontended cores
// read ~1 (1.6 on Zen 1); the bounds leave room for a busy host.
TEST(HostContention, ProbeReadsAFiniteRatioOfTwoTimedChainsOnEveryThread) {
  for (double ratio : {host_contention_ratio(), team_contention_ratio()}) {
    EXPECT_TRUE(std::isfinite(ratio));
    EXPECT_GT(ratio, 0.25);
    EXPECT_LT(ratio, 50.0);
  }
}

TEST(Sampler, RunsWarmupThenTimedRepeats) {
  Harness h;
  const MeasuredSamples measured = measure_cell(h.cell, h.backend, 3, 5, CacheState::hot);
  EXPECT_EQ(h.cell.runs, 8);
  EXPECT_EQ(h.backend.timed_calls, 5);  // warmup is untimed
  EXPECT_EQ(measured.samples_ms, (std::vector<double>{1, 2, 3, 4, 5}));  // every sample, in order
  const EventLog expected{"run", "run", "run", "timed", "run", "timed", "run",
                          "timed", "run", "timed", "run", "timed", "run"};
  EXPECT_EQ(h.log, expected);
}

TEST(Sampler, ZeroWarmupIsAllowed) {
  Harness h;
  const MeasuredSamples measured = measure_cell(h.cell, h.backend, 0, 2, CacheState::hot);
  EXPECT_EQ(h.cell.runs, 2);
  EXPECT_EQ(measured.samples_ms.size(), 2u);
}

TEST(Sampler, ColdEvictsTheCellBuffersBeforeEachTimedSample) {
  Harness h;
  measure_cell(h.cell, h.backend, 2, 3, CacheState::cold);
  const EventLog expected{"run",   "run",   "evict", "timed", "run", "evict",
                          "timed", "run",   "evict", "timed", "run"};
  EXPECT_EQ(h.log, expected);
  ASSERT_EQ(h.backend.evicted.size(), 3u);
  for (const auto& buffers : h.backend.evicted) {
    ASSERT_EQ(buffers.size(), 1u);
    EXPECT_EQ(buffers[0].data(), h.cell.state().data());
    EXPECT_EQ(buffers[0].size(), h.cell.state().size());
  }
}

TEST(Sampler, HotNeverEvicts) {
  Harness h;
  measure_cell(h.cell, h.backend, 2, 4, CacheState::hot);
  EXPECT_TRUE(h.backend.evicted.empty());
}

TEST(Sampler, CountsAllocationsMadeInsideRun) {
  Harness h(/*allocate_in_run=*/true);
  // The cell's own state was allocated at preparation, before measuring: not counted.
  ASSERT_EQ(h.backend.allocator().allocation_count(), 1);
  const MeasuredSamples measured = measure_cell(h.cell, h.backend, 4, 6, CacheState::cold);
  EXPECT_EQ(measured.allocations_during_timing, 10);  // one per run(), warmup included
}

TEST(Sampler, AllocationFreeRunCountsZero) {
  Harness h;
  const MeasuredSamples measured = measure_cell(h.cell, h.backend, 4, 6, CacheState::cold);
  EXPECT_EQ(measured.allocations_during_timing, 0);
}

TEST(Sampler, ProgressIsSparseMonotonicAndEndsAtTotal) {
  Harness h;
  std::vector<std::int64_t> reported;
  const auto progress = [&](std::int64_t done, std::int64_t total) {
    EXPECT_EQ(total, 1000);
    reported.push_back(done);
  };
  measure_cell(h.cell, h.backend, 100, 900, CacheState::hot, progress);
  ASSERT_FALSE(reported.empty());
  EXPECT_LE(reported.size(), 11u);
  EXPECT_EQ(reported.back(), 1000);
  for (std::size_t i = 1; i < reported.size(); ++i) EXPECT_GT(reported[i], reported[i - 1]);
}

TEST(Sampler, ProgressReportsEndForTinyCells) {
  Harness h;
  std::vector<std::int64_t> reported;
  measure_cell(h.cell, h.backend, 0, 3, CacheState::hot,
               [&](std::int64_t done, std::int64_t) { reported.push_back(done); });
  EXPECT_EQ(reported, (std::vector<std::int64_t>{1, 2, 3}));
}

TEST(Sampler, RejectsNonPositiveRepeatsAndNegativeWarmup) {
  Harness h;
  EXPECT_THROW(measure_cell(h.cell, h.backend, 1, 0, CacheState::hot), std::invalid_argument);
  EXPECT_THROW(measure_cell(h.cell, h.backend, -1, 5, CacheState::hot), std::invalid_argument);
  EXPECT_EQ(h.cell.runs, 0);
}

TEST(Sampler, StepsPerSampleTimesBackToBackCallsAndDividesTheElapsedTime) {
  Harness h;
  // The scripted clock gives 1, 2, 3 ms per timed region; each region holds 4 calls of run().
  const MeasuredSamples measured =
      measure_cell(h.cell, h.backend, 1, 3, CacheState::cold, {}, {TimingMethod::steady_clock, 4});
  EXPECT_EQ(h.cell.runs, 1 + 3 * 4);
  EXPECT_EQ(h.backend.timed_calls, 3);
  EXPECT_EQ(measured.samples_ms, (std::vector<double>{0.25, 0.5, 0.75}));
  // One eviction per sample, before its whole batch (not before every step).
  const EventLog expected{"run", "evict", "timed", "run", "run", "run", "run", "evict", "timed", "run", "run",
                          "run", "run", "evict", "timed", "run", "run", "run", "run"};
  EXPECT_EQ(h.log, expected);
}

TEST(Sampler, CpuBackendRefusesCudaTimingMethods) {
  Harness h;
  for (TimingMethod method : {TimingMethod::cuda_events, TimingMethod::cuda_events_batched, TimingMethod::cuda_graph}) {
    EXPECT_THROW(measure_cell(h.cell, h.backend, 0, 2, CacheState::hot, {}, {method, 10}), UsageError);
  }
  EXPECT_EQ(h.backend.timed_calls, 0);
}

TEST(Sampler, StopsBetweenSamplesWhenInterruptedAndSaysHowFarItGot) {
  Harness h;
  int samples_seen = 0;
  const auto progress = [&](std::int64_t done, std::int64_t) {
    if (++samples_seen == 2) request_interrupt(2);  // SIGINT after the second call
    (void)done;
  };
  try {
    measure_cell(h.cell, h.backend, 0, 10, CacheState::hot, progress);
    ADD_FAILURE() << "an interrupted cell must not return samples as if complete";
  } catch (const CellFailure& failure) {
    EXPECT_EQ(failure.kind(), "interrupted");
    EXPECT_NE(std::string(failure.what()).find("signal 2"), std::string::npos) << failure.what();
  }
  clear_interrupt();
  EXPECT_EQ(h.backend.timed_calls, 2);
}

TEST(SamplerLaunchOverhead, IsNotMeasuredOnTheCpu) {
  Harness h;
  EXPECT_FALSE(measure_launch_overhead_ms(h.cell, h.backend, 10, 5).has_value());
  EXPECT_EQ(h.cell.runs, 0);
}

TEST(TimingMethod, NamesRoundTripAndOnlySteadyClockIsCpu) {
  for (TimingMethod method : {TimingMethod::steady_clock, TimingMethod::cuda_events,
                              TimingMethod::cuda_events_batched, TimingMethod::cuda_graph}) {
    const auto parsed = parse_timing_method(timing_method_name(method));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, method);
    EXPECT_EQ(is_cuda_timing(method), method != TimingMethod::steady_clock);
  }
  EXPECT_FALSE(parse_timing_method("cuda").has_value());
  EXPECT_FALSE(parse_timing_method("").has_value());
}

TEST(SamplerTimerOverhead, IsTheMedianOfEmptyTimedCalls) {
  EventLog log;
  FakeBackend backend(log);
  // Scripted clock gives 1..101 ms; the median is 51 and nothing but the clock ran.
  EXPECT_DOUBLE_EQ(measure_timer_overhead_ms(backend, 101), 51.0);
  EXPECT_EQ(backend.timed_calls, 101);
  EXPECT_EQ(std::count(log.begin(), log.end(), "run"), 0);
}

TEST(SamplerTimerOverhead, CpuClockOverheadIsFiniteAndNonNegative) {
  CpuBackend backend;
  const double overhead = measure_timer_overhead_ms(backend, 200);
  EXPECT_TRUE(std::isfinite(overhead));
  EXPECT_GE(overhead, 0.0);
  EXPECT_THROW(measure_timer_overhead_ms(backend, 0), std::invalid_argument);
}

TEST(OmpForkJoin, CostIsAPositiveMedianAndBadArgumentsAreRefused) {
  for (const int threads : {1, 2}) {
    const double us = measure_omp_fork_join_us(threads, 51);
    EXPECT_TRUE(std::isfinite(us)) << threads;
    EXPECT_GT(us, 0.0) << threads;
  }
  EXPECT_THROW(measure_omp_fork_join_us(2, 0), std::invalid_argument);
  EXPECT_THROW(measure_omp_fork_join_us(0, 10), std::invalid_argument);
}

}  // namespace
}  // namespace arch_bench
