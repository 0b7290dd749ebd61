// A run cannot take the host down (issue 42, item 6): every built-in mechanism's predicted process
// bytes against the resident set its cells really add; the memory room read from made-up /proc and
// cgroup trees; the refusal before the first allocation; a stop seen while a cell is drawn and allocated.
#include <malloc.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "core/errors.hpp"
#include "core/stop_request.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/registry.hpp"
#include "runner/modes/mode.hpp"
#include "runner/pipeline/check_resources.hpp"
#include "runner/pipeline/plan.hpp"
#include "runner/preflight/memory_room.hpp"
#include "runner/shard/plan_hash.hpp"
#include "tests/support/cli.hpp"

namespace arch_bench {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// VmRSS / VmHWM of this process, bytes; -1 when /proc/self/status lacks them.
std::int64_t status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with(key + ":")) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    std::int64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return -1;
}

// The high-water mark the cell adds to the process, as the harness drives it: prepare, one run, the
// fp64 check. Freed memory is handed back first and the peak reset ("5" to clear_refs, Linux 4.0),
// so that the mark is this cell's alone. nullopt where the kernel does not offer the reset.
std::optional<std::int64_t> measured_growth(const Mechanism& mechanism, const Cell& cell) {
  malloc_trim(0);
  {
    std::ofstream clear("/proc/self/clear_refs");
    if (!(clear << "5" << std::flush)) return std::nullopt;
  }
  const std::int64_t before = status_bytes("VmRSS");
  if (before < 0 || status_bytes("VmHWM") > before + kMiB) return std::nullopt;  // the reset did not take
  {
    CpuBackend backend;
    std::unique_ptr<PreparedCell> prepared = mechanism.prepare(cell, 42, backend);
    prepared->run();
    (void)prepared->check();
  }
  return status_bytes("VmHWM") - before;
}

// The prediction covers what the cell adds and is no gross over-estimate: at most 1.5x the measured
// growth plus the fixed allowance (kProcessOverheadBytes) and 16 MiB of slack for the allocator.
TEST(ProcessMemory, EveryMechanismsPredictionCoversTheResidentSetItsCellsAdd) {
  const Cell probe{"softmax_kv", Phase::decode, 16, 1, 1, 16, DType::float32, {}};
  if (!measured_growth(*find_mechanism("softmax_kv"), probe)) GTEST_SKIP() << "no VmHWM reset on this kernel";
  struct Size {
    std::int64_t batch, length;
  };
  // Two sizes whose (batch x heads x tokens) differ 4x, so a term that grows with either is seen.
  for (const Size size : {Size{4, 256}, Size{8, 512}}) {
    for (const std::unique_ptr<Mechanism>& mechanism : all_mechanisms()) {
      if (plugin_origin(mechanism->info().id) != nullptr) continue;
      for (Phase phase : {Phase::decode, Phase::prefill}) {
        const Cell cell{mechanism->info().id, phase, size.length, size.batch, 8, 64, DType::bfloat16, {}};
        const std::int64_t predicted = mechanism->predicted_process_bytes(cell);
        const std::optional<std::int64_t> grown = measured_growth(*mechanism, cell);
        ASSERT_TRUE(grown);
        const std::string where = fmt::format("{} {} batch {} L {}: predicted {:.1f} MiB, measured {:.1f} MiB",
                                              cell.mechanism, phase_name(phase), size.batch, size.length,
                                              double(predicted) / kMiB, double(*grown) / kMiB);
        std::printf("%s\n", where.c_str());
        EXPECT_GE(predicted, *grown) << where;
        EXPECT_LE(predicted, *grown * 3 / 2 + kProcessOverheadBytes + 16 * kMiB) << where;
      }
    }
  }
}

// A made-up machine: /proc (meminfo, self/cgroup) and a cgroup tree, in a temporary folder.
struct FakeMachine {
  testing::TempFolder folder;
  std::filesystem::path proc() const { return folder.path() / "proc"; }
  std::filesystem::path cgroup() const { return folder.path() / "cgroup"; }
  void write(const std::filesystem::path& file, const std::string& text) const {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  explicit FakeMachine(std::int64_t mem_available_kib, const std::string& cgroup_line) {
    write(proc() / "meminfo", fmt::format("MemTotal:       99999999 kB\nMemAvailable:   {} kB\n", mem_available_kib));
    write(proc() / "self" / "cgroup", cgroup_line + "\n");
    std::filesystem::create_directories(cgroup());
  }
};

TEST(MemoryRoom, MemAvailableAloneWhenNoCgroupLimits) {
  FakeMachine machine(8 * 1024 * 1024, "0::/job");
  machine.write(machine.cgroup() / "job" / "memory.current", "1000\n");
  machine.write(machine.cgroup() / "job" / "memory.max", "max\n");
  const MemoryRoom room = read_memory_room(machine.proc(), machine.cgroup());
  ASSERT_EQ(room.limits.size(), 1u);
  EXPECT_EQ(room.tightest()->source, "MemAvailable");
  EXPECT_EQ(room.tightest()->room_bytes, std::int64_t{8} << 30);
}

TEST(MemoryRoom, ACgroupV2LimitBelowMemAvailableIsTheTightest) {
  FakeMachine machine(64 * 1024 * 1024, "0::/slurm/job7");
  // The job has no limit of its own; its parent allows 4 GiB, 3 GiB used of which 1 GiB is page cache.
  machine.write(machine.cgroup() / "slurm" / "job7" / "memory.current", "100\n");
  machine.write(machine.cgroup() / "slurm" / "job7" / "memory.max", "max\n");
  machine.write(machine.cgroup() / "slurm" / "memory.current", std::to_string(std::int64_t{3} << 30));
  machine.write(machine.cgroup() / "slurm" / "memory.max", std::to_string(std::int64_t{4} << 30));
  machine.write(machine.cgroup() / "slurm" / "memory.stat", fmt::format("anon 5\ninactive_file {}\n", std::int64_t{1} << 30));
  const std::optional<MemoryLimit> tightest = read_memory_room(machine.proc(), machine.cgroup()).tightest();
  ASSERT_TRUE(tightest);
  EXPECT_EQ(tightest->source, "cgroup v2 memory.max");
  EXPECT_EQ(tightest->room_bytes, std::int64_t{2} << 30);  // 4 GiB - (3 GiB - 1 GiB reclaimable)
}

TEST(MemoryRoom, ACgroupV1LimitIsReadFromTheNamespacedMount) {
  // Inside a container the memory controller's mount is the container's own cgroup: the path that
  // /proc/self/cgroup names does not exist under it.
  FakeMachine machine(64 * 1024 * 1024, "4:memory:/docker/abc");
  machine.write(machine.cgroup() / "memory" / "memory.usage_in_bytes", std::to_string(std::int64_t{1} << 30));
  machine.write(machine.cgroup() / "memory" / "memory.limit_in_bytes", std::to_string(std::int64_t{2} << 30));
  machine.write(machine.cgroup() / "memory" / "memory.stat", "total_inactive_file 0\n");
  const std::optional<MemoryLimit> tightest = read_memory_room(machine.proc(), machine.cgroup()).tightest();
  ASSERT_TRUE(tightest);
  EXPECT_EQ(tightest->source, "cgroup v1 memory.limit_in_bytes");
  EXPECT_EQ(tightest->room_bytes, std::int64_t{1} << 30);
}

TEST(MemoryRoom, AnUnlimitedCgroupV1AddsNoLimit) {
  FakeMachine machine(1024, "4:memory:/");
  machine.write(machine.cgroup() / "memory" / "memory.usage_in_bytes", "5174841344\n");
  machine.write(machine.cgroup() / "memory" / "memory.limit_in_bytes", "9223372036854771712\n");
  const MemoryRoom room = read_memory_room(machine.proc(), machine.cgroup());
  ASSERT_EQ(room.limits.size(), 1u);
  EXPECT_EQ(room.tightest()->source, "MemAvailable");
}

Plan linear_recurrence_plan(std::int64_t batch) {
  Workload workload = (*find_mode("linear_recurrence")).defaults().workload;
  workload.sequence_lengths = {64};
  workload.batch = batch;
  return build_plan((*find_mode("linear_recurrence")), workload, "cpu");
}

// Issue 42's plan (--batch 100000 at L 64, 23.8 GB), or nullopt where this machine has room for it
// and so cannot show what happens to a run that does not fit.
std::optional<Plan> plan_that_cannot_fit_here() {
  Plan plan = linear_recurrence_plan(100000);
  const std::optional<MemoryLimit> room = read_memory_room().tightest();
  if (!room || room->room_bytes >= plan.max_predicted_process_bytes()) return std::nullopt;
  return plan;
}

TEST(CheckMemoryFits, TheProcessShareNotTheBuffersMustFit) {
  Plan plan = linear_recurrence_plan(5000);
  // Room for every cell's buffers, not for their inputs: the old check (buffers against
  // MemAvailable) let this start.
  const std::int64_t room = plan.max_predicted_peak_bytes() + kMiB;
  ASSERT_GT(plan.max_predicted_process_bytes(), room);
  const MemoryLimit limit{"cgroup v2 memory.max", room, "limit 9 GiB, 8 GiB in use in /sys/fs/cgroup/job"};
  try {
    check_memory_fits(plan, "cpu", limit, std::nullopt);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("cgroup v2 memory.max"), std::string::npos) << message;
    EXPECT_NE(message.find("nothing was allocated"), std::string::npos) << message;
    EXPECT_NE(message.find("--batch"), std::string::npos) << message;
    EXPECT_NE(message.find("--skip-cells-that-do-not-fit"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(check_memory_fits(plan, "cpu", MemoryLimit{"MemAvailable", plan.max_predicted_process_bytes(), ""},
                                    std::nullopt));
  EXPECT_NO_THROW(check_memory_fits(plan, "cpu", std::nullopt, std::nullopt));  // unknown: nothing refused
}

TEST(CheckMemoryFits, UnderSkipOnlyTheCellsThatDoNotFitAreMarked) {
  Workload workload = find_mode("linear_recurrence")->defaults().workload;
  workload.sequence_lengths = {64, 4096};
  workload.batch = 64;
  Plan plan = build_plan(*find_mode("linear_recurrence"), workload, "cpu");
  // Room for every cell at L 64 and for none at L 4096 (softmax_kv's cache grows with L).
  std::int64_t small = 0;
  for (const PlannedCell& cell : plan.cells) {
    if (cell.cell.sequence_length == 64) small = std::max(small, cell.predicted_process_bytes);
  }
  const MemoryLimit limit{"MemAvailable", small, "/proc/meminfo"};
  check_memory_fits(plan, "cpu", limit, std::nullopt, true);
  for (const PlannedCell& cell : plan.cells) {
    const bool fits = cell.predicted_process_bytes <= small;
    EXPECT_EQ(cell.skip_reason.empty(), fits) << cell.cell.mechanism << " L " << cell.cell.sequence_length;
    if (!fits) {
      EXPECT_NE(cell.skip_reason.find("MemAvailable"), std::string::npos) << cell.skip_reason;
    }
  }
}

TEST(CheckMemoryFits, OnAGpuTheHostHoldsTheCellLessItsDeviceBuffers) {
  Plan plan = linear_recurrence_plan(64);
  const PlannedCell& cell = plan.cells.front();
  EXPECT_EQ(host_bytes_of(cell, "cuda"), cell.predicted_process_bytes - cell.predicted_peak_bytes);
  EXPECT_EQ(host_bytes_of(cell, "cpu"), cell.predicted_process_bytes);
  EXPECT_THROW(check_memory_fits(plan, "cuda", std::nullopt, cell.predicted_peak_bytes - 1), UsageError);
}

// Shards of one plan run on nodes with different thread counts (performer's and mamba's per-thread
// scratch): the prediction must not split one plan into two hashes.
TEST(ProcessMemory, ThePlanHashIgnoresThePrediction) {
  const Mode& mode = *find_mode("linear_recurrence");
  const Workload workload = mode.defaults().workload;
  Plan plan = build_plan(mode, workload, "cpu");
  const std::string hash = plan_hash(mode.id(), "cpu", workload, plan);
  plan.cells.front().predicted_process_bytes += 12345;
  EXPECT_EQ(plan_hash(mode.id(), "cpu", workload, plan), hash);
  plan.cells.front().predicted_peak_bytes += 1;  // what the hash does cover still changes it
  EXPECT_NE(plan_hash(mode.id(), "cpu", workload, plan), hash);
}

TEST(ProcessMemory, TheRowsAndTheDryRunPlanReportThePrediction) {
  testing::TempFolder folder;
  const testing::CliResult result = testing::run_cli(
      fmt::format("run --dry-run --sequence-lengths 64 --batch 2 --output {}", (folder.path() / "plan.json").string()));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = testing::read_json(folder.path() / "plan.json");
  EXPECT_EQ(report["schema_version"], "1.1.0");
  for (const nlohmann::json& cell : report["plan"]) {
    ASSERT_TRUE(cell.contains("predicted_process_bytes")) << cell.dump();
    EXPECT_GT(cell["predicted_process_bytes"].get<std::int64_t>(), cell["predicted_peak_bytes"].get<std::int64_t>());
  }
  const testing::CliResult measured = testing::run_cli(
      fmt::format("run --sequence-lengths 16 --warmup 0 --repeats 2 --output {}", (folder.path() / "rows.json").string()));
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  const nlohmann::json rows = testing::read_json(folder.path() / "rows.json")["metrics"]["rows"];
  ASSERT_FALSE(rows.empty());
  for (const nlohmann::json& row : rows) {
    EXPECT_GE(row["predicted_process_bytes"].get<std::int64_t>(), row["peak_memory_bytes"].get<std::int64_t>()) << row.dump();
  }
}

TEST(ProcessMemory, ARunThatCannotFitIsRefusedWithExit2BeforeItAllocates) {
  // Issue 42: --batch 100000 at L 64 grew to 23.8 GB and was killed by the OOM killer.
  if (!plan_that_cannot_fit_here()) GTEST_SKIP() << "this machine has room for the cell";
  testing::TempFolder folder;
  const auto start = std::chrono::steady_clock::now();
  const testing::CliResult result = testing::run_cli(fmt::format(
      "run --batch 100000 --sequence-lengths 64 --output {}", (folder.path() / "big.json").string()));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("predicted to need"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("is available"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(folder.path() / "big.json"));
  EXPECT_LT(seconds, 10.0) << "refused after measuring, not before";
}

TEST(ProcessMemory, UnderSkipARunThatCannotFitWritesSkippedRowsSayingWhy) {
  const std::optional<Plan> plan = plan_that_cannot_fit_here();
  if (!plan) GTEST_SKIP() << "this machine has room for the cell";
  testing::TempFolder folder;
  const testing::CliResult result = testing::run_cli(
      fmt::format("run --batch 100000 --sequence-lengths 64 --repeats 2 --skip-cells-that-do-not-fit --output {}",
                  (folder.path() / "skipped.json").string()));
  ASSERT_TRUE(std::filesystem::exists(folder.path() / "skipped.json")) << result.err;
  const nlohmann::json rows = testing::read_json(folder.path() / "skipped.json")["metrics"]["rows"];
  ASSERT_EQ(rows.size(), plan->cells.size());
  for (const nlohmann::json& row : rows) {
    EXPECT_EQ(row["status"], "skipped") << row.dump();
    EXPECT_NE(row["reason"].get<std::string>().find("predicted to need"), std::string::npos) << row.dump();
    EXPECT_EQ(row["peak_memory_bytes"], 0) << "a skipped cell allocated";
  }
}

// A stop during set-up ends the cell within one poll: drawing ~200 MB of inputs would take seconds.
TEST(StopRequest, DrawingAndAllocatingAreCutShortAsAnInterruptedCell) {
  clear_stop_request();
  ASSERT_TRUE(request_stop(15));
  const Cell cell{"linear_attention", Phase::prefill, 4096, 64, 8, 64, DType::bfloat16, {}};
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)make_attention_inputs(cell, cell.sequence_length, 1);
    ADD_FAILURE() << "drawing went on after the stop";
  } catch (const CellFailure& failure) {
    EXPECT_EQ(failure.kind(), "interrupted");
    EXPECT_NE(std::string(failure.what()).find("signal 15"), std::string::npos) << failure.what();
  }
  CpuBackend backend;
  EXPECT_THROW((void)backend.allocator().allocate(std::size_t{256} << 20), CellFailure);
  EXPECT_EQ(backend.allocator().current_bytes(), 0);
  EXPECT_THROW((void)find_mechanism("softmax_kv")->prepare(cell, 1, backend), CellFailure);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  clear_stop_request();
  EXPECT_NO_THROW((void)make_attention_inputs(Cell{"softmax_kv", Phase::prefill, 8, 1, 1, 8, DType::float32, {}}, 8, 1));
}

}  // namespace
}  // namespace arch_bench
