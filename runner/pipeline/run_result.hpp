#pragma once
// What one `arch-bench run` produced, before it becomes JSON: the rows (one per measured cell),
// the measured ceilings and the decision. runner/report/ turns it into the report document.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mechanisms/mechanism.hpp"
#include "core/backends/ceilings.hpp"
#include "core/backends/timing.hpp"
#include "core/cell.hpp"

namespace arch_bench {

struct SampleStats {
  double mean = 0, median = 0, p05 = 0, p95 = 0, stdev = 0, rel_stdev = 0, min = 0, max = 0;
};

enum class Role { baseline, candidate };
std::string role_name(Role role);

enum class RowStatus { ok, skipped, failed };
std::string row_status_name(RowStatus status);

struct Row {
  Cell cell;
  Role role = Role::candidate;
  std::string variant;  // distinguishes arms of one mechanism, e.g. "m=64"; empty when only one
  std::string backend = "cpu";
  StateKind state_kind = StateKind::fixed_state;
  std::int64_t state_bytes = 0;
  std::int64_t predicted_peak_bytes = 0;
  // What the process gains for the cell (Mechanism::predicted_process_bytes); nullopt in a row read
  // back from a report older than the field (schema 1.0.0).
  std::optional<std::int64_t> predicted_process_bytes;
  RowStatus status = RowStatus::ok;
  std::string reason;  // why skipped/failed; empty when ok
  // What kind of failure (report field `failure_kind`): "out_of_memory", "cuda_error", "device_lost",
  // "non_finite_output", "mechanism_error", "interrupted", ...; empty when ok.
  std::string failure_kind;

  std::int64_t warmup = 0;
  TimingPlan timing;               // how each sample was timed; samples are per timed unit
  std::vector<double> samples_ms;  // every timed repeat (elapsed / steps_per_sample), in order
  // GPU: per-step time of batched event timing minus that of CUDA-graph replay of the same steps,
  // i.e. what launching costs per step (nullopt on the CPU).
  std::optional<double> launch_overhead_ms;
  // Free device memory (cudaMemGetInfo) before the cell was prepared and after it was measured.
  std::optional<std::int64_t> device_free_before_bytes, device_free_after_bytes;
  SampleStats stats;               // of samples_ms

  // CPU, cold cache or a hot cell larger than the team's private caches: median over the samples of
  // the host's memory read rate just before each, the team's slowest thread
  // (runner/measure/memory_probe.hpp), GB/s.
  std::optional<double> host_memory_gbps;
  std::int64_t peak_memory_bytes = 0;          // tracked allocator peak during the cell
  std::int64_t allocations_during_timing = 0;  // allocator calls inside warmup + repeats
  // CPU: median of host_contention_ratio() over the samples (~1 on a core of its own; ~1.5 when the
  // host shares the core, which slows throughput-bound kernels by about that much).
  std::optional<double> host_contention;
  // CPU, team of two or more: of the checks taken just after each sample (runner/measure/team_check.hpp),
  // how many found a worker that did not answer (its vCPU not running), and their median in us.
  std::optional<std::int64_t> team_stalled_samples;
  std::optional<double> team_check_median_us;
  // CPU, team of two or more, under the team trial (runner/measure/team_trial.hpp): of the samples,
  // how many ran on one thread because the visit's trial found it faster than the team.
  std::optional<std::int64_t> one_thread_samples;
  // Of the visits whose trial timed both sides (the step under kTeamTrialMaxStepMs): the median over
  // those visits of each trial's team and one-thread medians, in us; what splitting the step gave.
  std::optional<double> trial_team_median_us, trial_one_thread_median_us;
  std::string cpu_kernel_isa;  // CPU rows: PreparedCell::cpu_kernel_isa(); empty otherwise
  std::string gpu_kernel;      // GPU rows of a cell with implementations to choose from (NamesGpuKernel); else empty
  Accuracy accuracy;
  double tolerance = 0;  // max_rel_error accepted for the dtype

  Cost cost;  // per timed unit
  double achieved_gbps = 0, achieved_gflops = 0;
  double fraction_of_memory_bandwidth = 0, fraction_of_peak_flops = 0;

  bool within_tolerance() const { return accuracy.output_finite && accuracy.max_rel_error <= tolerance; }
};

struct Decision {
  std::string verdict;
  std::vector<std::string> reasons;
  std::optional<std::int64_t> crossover_length;  // first length from which the candidate is faster
  nlohmann::json details = nlohmann::json::object();  // per-mode extras (ratios, per-phase crossovers)
  std::string next_action;
};

struct Failure {
  std::string kind;     // e.g. "mechanism_error", "preflight_failed"
  std::string message;
  std::optional<Cell> cell;
};

}  // namespace arch_bench
