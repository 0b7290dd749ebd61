// execute_plan's failure handling, with scripted mechanisms on the CPU backend: a failing cell is a
// row, not a crash; a sticky device error fails every later cell; non-finite outputs fail their row
// without timings; an interrupt stops between cells and keeps what was measured.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <omp.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "core/errors.hpp"
#include "runner/pipeline/execute.hpp"
#include "runner/pipeline/interrupt.hpp"
#include "runner/measure/memory_probe.hpp"
#include "core/backends/cpu/host_facts.hpp"

namespace arch_bench {
namespace {

// What prepare() does for the cell at a given sequence length.
enum class Script { ok, out_of_memory, device_lost, cuda_error, non_finite, bad_alloc, interrupt_in_run };

class ScriptedCell final : public PreparedCell {
 public:
  ScriptedCell(Script script, Allocator& allocator, std::int64_t floats)
      : script_(script), state_(allocator, floats) {}
  void run() override {
    ++runs;
    if (script_ == Script::interrupt_in_run && runs == 3) request_interrupt(15);
  }
  Accuracy check() const override {
    Accuracy accuracy;
    if (script_ == Script::non_finite) {
      accuracy.output_finite = false;
      accuracy.max_abs_error = INFINITY;
    }
    return accuracy;
  }
  std::vector<ByteSpan> buffers() const override { return {state_.byte_span()}; }
  int runs = 0;

 private:
  Script script_;
  Buffer<float> state_;
};

class ScriptedMechanism final : public Mechanism {
 public:
  explicit ScriptedMechanism(std::function<Script(std::int64_t)> script) : script_(std::move(script)) {}
  const MechanismInfo& info() const override {
    static const MechanismInfo info{"scripted", "test double", StateKind::fixed_state, {"cpu"}};
    return info;
  }
  std::optional<std::string> unsupported(const Cell&) const override { return std::nullopt; }
  std::int64_t state_bytes(const Cell&) const override { return 64; }
  std::int64_t predicted_peak_bytes(const Cell&) const override { return 64; }
  Cost cost(const Cell&) const override { return {1000, 1000}; }
  std::unique_ptr<PreparedCell> prepare(const Cell& cell, std::uint64_t, Backend& backend) const override {
    ++prepared;
    visits.push_back(cell.sequence_length);
    const Script script = script_(cell.sequence_length);  // once per visit: a script may count visits
    switch (script) {
      case Script::out_of_memory: throw CellFailure("out_of_memory", "cudaMalloc of 1 TiB failed");
      case Script::device_lost: throw CellFailure("device_lost", "kernel x: cudaErrorIllegalAddress", true);
      case Script::cuda_error: throw CellFailure("cuda_error", "launch of kernel y: invalid configuration");
      case Script::bad_alloc: throw std::bad_alloc();
      // Lengths of 1024 and more give the cell that many floats of buffer (the memory probe's cases).
      default:
        return std::make_unique<ScriptedCell>(script, backend.allocator(),
                                              cell.sequence_length >= 1024 ? cell.sequence_length : 16);
    }
  }
  mutable int prepared = 0;
  mutable std::vector<std::int64_t> visits;  // the sequence length of every prepare(), in order

 private:
  std::function<Script(std::int64_t)> script_;
};

Plan plan_for(const Mechanism& mechanism, const std::vector<std::int64_t>& lengths) {
  Plan plan;
  for (std::int64_t length : lengths) {
    Cell cell;
    cell.mechanism = "scripted";
    cell.sequence_length = length;
    plan.cells.push_back({Arm{"scripted", Role::candidate, "", {}}, cell, &mechanism, 64, 64});
  }
  return plan;
}

Workload small_workload() {
  Workload workload;
  workload.warmup = 1;
  workload.repeats = 4;
  workload.cache_state = CacheState::hot;
  return workload;
}

std::vector<Row> run_script(const ScriptedMechanism& mechanism, const std::vector<std::int64_t>& lengths) {
  CpuBackend backend;
  return execute_plan(plan_for(mechanism, lengths), small_workload(), backend, Ceilings{}, {});
}

TEST(Execute, OutOfMemoryFailsOnlyItsRowAndTheRunGoesOn) {
  const ScriptedMechanism mechanism([](std::int64_t length) { return length == 2 ? Script::out_of_memory : Script::ok; });
  const std::vector<Row> rows = run_script(mechanism, {1, 2, 3});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].status, RowStatus::ok);
  EXPECT_EQ(rows[0].samples_ms.size(), 4u);
  EXPECT_EQ(rows[1].status, RowStatus::failed);
  EXPECT_EQ(rows[1].failure_kind, "out_of_memory");
  EXPECT_NE(rows[1].reason.find("1 TiB"), std::string::npos);
  EXPECT_TRUE(rows[1].samples_ms.empty());
  EXPECT_EQ(rows[2].status, RowStatus::ok);
}

TEST(Execute, HostBadAllocIsAnOutOfMemoryRow) {
  const ScriptedMechanism mechanism([](std::int64_t length) { return length == 1 ? Script::bad_alloc : Script::ok; });
  const std::vector<Row> rows = run_script(mechanism, {1, 2});
  EXPECT_EQ(rows[0].failure_kind, "out_of_memory");
  EXPECT_EQ(rows[1].status, RowStatus::ok);
}

TEST(Execute, AStickyDeviceErrorFailsEveryLaterCellWithoutPreparingIt) {
  const ScriptedMechanism mechanism([](std::int64_t length) { return length == 2 ? Script::device_lost : Script::ok; });
  const std::vector<Row> rows = run_script(mechanism, {1, 2, 3, 4});
  ASSERT_EQ(rows.size(), 4u);  // the report still has a row for every planned cell
  EXPECT_EQ(rows[0].status, RowStatus::ok);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].status, RowStatus::failed) << i;
    EXPECT_EQ(rows[i].failure_kind, "device_lost") << i;
    EXPECT_NE(rows[i].reason.find("cudaErrorIllegalAddress"), std::string::npos) << rows[i].reason;
  }
  EXPECT_EQ(mechanism.prepared, 2);  // cells 3 and 4 were never touched
}

TEST(Execute, ANonStickyCudaErrorFailsOnlyItsRow) {
  const ScriptedMechanism mechanism([](std::int64_t length) { return length == 1 ? Script::cuda_error : Script::ok; });
  const std::vector<Row> rows = run_script(mechanism, {1, 2});
  EXPECT_EQ(rows[0].failure_kind, "cuda_error");
  EXPECT_EQ(rows[1].status, RowStatus::ok);
}

TEST(Execute, NonFiniteOutputsFailTheRowWithoutTimings) {
  const ScriptedMechanism mechanism([](std::int64_t) { return Script::non_finite; });
  const std::vector<Row> rows = run_script(mechanism, {8});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, RowStatus::failed);
  EXPECT_EQ(rows[0].failure_kind, "non_finite_output");
  EXPECT_FALSE(rows[0].accuracy.output_finite);
  EXPECT_TRUE(rows[0].samples_ms.empty());
}

TEST(Execute, AnInterruptStopsTheRunAndKeepsTheRowsMeasuredSoFar) {
  const ScriptedMechanism mechanism([](std::int64_t length) { return length == 2 ? Script::interrupt_in_run : Script::ok; });
  const std::vector<Row> rows = run_script(mechanism, {1, 2, 3});
  clear_interrupt();
  ASSERT_EQ(rows.size(), 2u);  // the third cell never started
  EXPECT_EQ(rows[0].status, RowStatus::ok);
  EXPECT_EQ(rows[1].status, RowStatus::failed);
  EXPECT_EQ(rows[1].failure_kind, "interrupted");
  EXPECT_EQ(mechanism.prepared, 2);
}

TEST(Execute, RowsRecordTheirTimingPlanAndNoLaunchOverheadOnTheCpu) {
  const ScriptedMechanism mechanism([](std::int64_t) { return Script::ok; });
  CpuBackend backend;
  Workload workload = small_workload();
  workload.timing = {TimingMethod::steady_clock, 3};
  const std::vector<Row> rows = execute_plan(plan_for(mechanism, {5}), workload, backend, Ceilings{}, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].timing.steps_per_sample, 3);
  EXPECT_FALSE(rows[0].launch_overhead_ms.has_value());
  EXPECT_FALSE(rows[0].device_free_before_bytes.has_value());
}

// The host probes of a CPU row: the contention probe always; the memory probe when the cache is
// cold, and when it is hot only for a cell whose buffers exceed the team's private caches (a probe's
// reads would evict part of a hot cell that fits them; runner/measure/memory_probe.hpp).
TEST(Execute, CpuRowsRecordTheMemoryProbeWhenColdOrStreamingPastThePrivateCaches) {
  const ScriptedMechanism mechanism([](std::int64_t) { return Script::ok; });
  CpuBackend backend;
  Workload cold = small_workload();
  cold.cache_state = CacheState::cold;
  const std::vector<Row> cold_rows = execute_plan(plan_for(mechanism, {1}), cold, backend, Ceilings{}, {});
  ASSERT_EQ(cold_rows.size(), 1u);
  ASSERT_TRUE(cold_rows[0].host_memory_gbps.has_value());
  EXPECT_GT(*cold_rows[0].host_memory_gbps, 0.0);
  EXPECT_TRUE(std::isfinite(*cold_rows[0].host_memory_gbps));
  EXPECT_TRUE(cold_rows[0].host_contention.has_value());

  // Hot: a 64-byte cell fits any private cache; one of twice the team's private caches does not. A
  // team of at most two keeps that cell (and the probes, a buffer per thread) small on a wide host.
  const int saved_threads = omp_get_max_threads();
  omp_set_num_threads(std::min(saved_threads, 2));
  const int threads = omp_get_max_threads();
  const std::int64_t team_private_bytes = static_cast<std::int64_t>(warm_probe_bytes()) / 2 * threads;
  const std::int64_t streaming_floats = std::max<std::int64_t>(1024, 2 * team_private_bytes / 4);
  EXPECT_FALSE(hot_cell_streams_past_private_caches(16 * 4, threads));
  EXPECT_TRUE(hot_cell_streams_past_private_caches(streaming_floats * 4, threads));
  const std::vector<Row> hot_rows =
      execute_plan(plan_for(mechanism, {1, streaming_floats}), small_workload(), backend, Ceilings{}, {});
  omp_set_num_threads(saved_threads);
  ASSERT_EQ(hot_rows.size(), 2u);
  EXPECT_FALSE(hot_rows[0].host_memory_gbps.has_value());
  EXPECT_TRUE(hot_rows[0].host_contention.has_value());
  ASSERT_TRUE(hot_rows[1].host_memory_gbps.has_value());
  EXPECT_GT(*hot_rows[1].host_memory_gbps, 0.0);
  EXPECT_TRUE(std::isfinite(*hot_rows[1].host_memory_gbps));
}

// The warm probe's buffer is twice one core's private cache, whole pages; the flushed one is 512 KiB.
TEST(MemoryProbe, BuffersAreSizedForTheirReading) {
  EXPECT_EQ(MemoryProbe(MemoryProbe::Reading::flushed).bytes(), MemoryProbe::kFlushedBytes);
  const std::int64_t private_cache = private_cache_bytes();
  EXPECT_EQ(warm_probe_bytes(), 2 * static_cast<std::size_t>(private_cache > 0 ? private_cache : 512 * 1024));
  MemoryProbe warm(MemoryProbe::Reading::warm, 5000);
  EXPECT_EQ(warm.bytes(), 8192u);
  EXPECT_GT(warm.read_gbps(), 0.0);
  // The team's probe: one buffer per thread of the team, the slowest rate.
  for (MemoryProbe::Reading reading : {MemoryProbe::Reading::flushed, MemoryProbe::Reading::warm}) {
    TeamMemoryProbe team(reading, 8192);
    EXPECT_EQ(team.threads(), omp_get_max_threads());
    const double gbps = team.read_gbps();
    EXPECT_GT(gbps, 0.0);
    EXPECT_TRUE(std::isfinite(gbps));
  }
}

// The team check after each CPU sample (runner/measure/team_check.hpp): a team of two records how
// many checks found a worker missing and their median; a team of one has nothing to wait for.
TEST(Execute, CpuRowsOfATeamRecordTheTeamChecksAndOneThreadRecordsNone) {
  const ScriptedMechanism mechanism([](std::int64_t) { return Script::ok; });
  CpuBackend backend;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  const std::vector<Row> team = execute_plan(plan_for(mechanism, {1}), small_workload(), backend, Ceilings{}, {});
  omp_set_num_threads(1);
  const std::vector<Row> alone = execute_plan(plan_for(mechanism, {1}), small_workload(), backend, Ceilings{}, {});
  omp_set_num_threads(threads);
  ASSERT_EQ(team.size(), 1u);
  ASSERT_TRUE(team[0].team_stalled_samples.has_value());
  EXPECT_GE(*team[0].team_stalled_samples, 0);
  EXPECT_LE(*team[0].team_stalled_samples, static_cast<std::int64_t>(team[0].samples_ms.size()));
  ASSERT_TRUE(team[0].team_check_median_us.has_value());
  EXPECT_GT(*team[0].team_check_median_us, 0.0);
  EXPECT_FALSE(alone[0].team_stalled_samples.has_value());
  EXPECT_FALSE(alone[0].team_check_median_us.has_value());
}

TEST(Execute, RoundsSplitTheRepeatsEvenlyTheRemainderToTheFirstRounds) {
  EXPECT_EQ(samples_in_round(7, 3, 0), 3);
  EXPECT_EQ(samples_in_round(7, 3, 1), 2);
  EXPECT_EQ(samples_in_round(7, 3, 2), 2);
  for (std::int64_t repeats : {1, 5, 100, 101}) {
    for (std::int64_t rounds = 1; rounds <= std::min<std::int64_t>(repeats, 9); ++rounds) {
      std::int64_t sum = 0;
      for (std::int64_t round = 0; round < rounds; ++round) {
        const std::int64_t samples = samples_in_round(repeats, rounds, round);
        EXPECT_GE(samples, 1) << repeats << " " << rounds;
        EXPECT_LE(samples, repeats / rounds + 1) << repeats << " " << rounds;
        sum += samples;
      }
      EXPECT_EQ(sum, repeats) << repeats << " " << rounds;
    }
  }
}

Workload rounds_workload(std::int64_t rounds, std::int64_t repeats) {
  Workload workload = small_workload();
  workload.rounds = rounds;
  workload.repeats = repeats;
  return workload;
}

// Each round visits every cell in plan order, so each cell's samples are spread over the whole run;
// the fp64 check runs on the first visit only, and each row holds all its repeats.
TEST(Execute, RoundsVisitEveryCellInPlanOrderAndEachRowHoldsAllItsRepeats) {
  const ScriptedMechanism mechanism([](std::int64_t) { return Script::ok; });
  CpuBackend backend;
  const std::vector<Row> rows = execute_plan(plan_for(mechanism, {1, 2}), rounds_workload(3, 7), backend, Ceilings{}, {});
  EXPECT_EQ(mechanism.visits, (std::vector<std::int64_t>{1, 2, 1, 2, 1, 2}));
  ASSERT_EQ(rows.size(), 2u);
  for (const Row& row : rows) {
    EXPECT_EQ(row.status, RowStatus::ok);
    EXPECT_EQ(row.samples_ms.size(), 7u);
    EXPECT_GT(row.stats.median, 0.0);  // the statistics are of every round's samples
    EXPECT_EQ(row.host_contention.has_value(), true);  // one probe per sample, over every round
  }
}

// A script under which the cell of length 2 does `second` on its second visit (round 2) and every
// other visit is ok.
std::function<Script(std::int64_t)> on_second_visit_of_length_two(Script second) {
  auto visits = std::make_shared<int>(0);
  return [visits, second](std::int64_t length) {
    if (length != 2) return Script::ok;
    return ++*visits == 2 ? second : Script::ok;
  };
}

TEST(Execute, ACellThatFailsInALaterRoundLosesItsSamplesAndIsNotVisitedAgain) {
  const ScriptedMechanism mechanism(on_second_visit_of_length_two(Script::out_of_memory));
  CpuBackend backend;
  const std::vector<Row> rows = execute_plan(plan_for(mechanism, {1, 2}), rounds_workload(3, 6), backend, Ceilings{}, {});
  EXPECT_EQ(mechanism.visits, (std::vector<std::int64_t>{1, 2, 1, 2, 1}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].samples_ms.size(), 6u);
  EXPECT_EQ(rows[1].status, RowStatus::failed);
  EXPECT_EQ(rows[1].failure_kind, "out_of_memory");
  EXPECT_TRUE(rows[1].samples_ms.empty());  // a row whose run broke off reports no timings
}

TEST(Execute, AnInterruptInALaterRoundKeepsTheEarlierRoundsRows) {
  const ScriptedMechanism mechanism(on_second_visit_of_length_two(Script::interrupt_in_run));
  CpuBackend backend;
  const std::vector<Row> rows = execute_plan(plan_for(mechanism, {1, 2, 3}), rounds_workload(2, 4), backend, Ceilings{}, {});
  clear_interrupt();
  EXPECT_EQ(mechanism.visits, (std::vector<std::int64_t>{1, 2, 3, 1, 2}));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].samples_ms.size(), 4u);  // both rounds
  EXPECT_EQ(rows[1].failure_kind, "interrupted");
  EXPECT_EQ(rows[2].status, RowStatus::ok);
  EXPECT_EQ(rows[2].samples_ms.size(), 2u);  // its first round only; the run as a whole decides nothing
  EXPECT_GT(rows[2].stats.median, 0.0);
}

}  // namespace
}  // namespace arch_bench
