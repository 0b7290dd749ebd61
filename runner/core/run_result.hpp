#pragma once
// What one `arch-bench run` produced, before it becomes JSON: the rows (one per measured cell),
// the measured ceilings and the decision. runner/report/ turns it into the report document.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mechanisms/mechanism.hpp"
#include "runner/core/cell.hpp"

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
  RowStatus status = RowStatus::ok;
  std::string reason;  // why skipped/failed; empty when ok

  std::int64_t warmup = 0;
  std::vector<double> samples_ms;  // every timed repeat, in order
  SampleStats stats;               // of samples_ms

  std::int64_t peak_memory_bytes = 0;          // tracked allocator peak during the cell
  std::int64_t allocations_during_timing = 0;  // allocator calls inside warmup + repeats
  Accuracy accuracy;
  double tolerance = 0;  // max_rel_error accepted for the dtype

  Cost cost;  // per timed unit
  double achieved_gbps = 0, achieved_gflops = 0;
  double fraction_of_memory_bandwidth = 0, fraction_of_peak_flops = 0;

  bool within_tolerance() const { return accuracy.output_finite && accuracy.max_rel_error <= tolerance; }
};

// Machine ceilings measured in the same run, against which every row's rates are expressed.
struct Ceilings {
  double memory_read_gbps = 0;   // streaming read of a buffer 4x the last-level cache
  double memory_triad_gbps = 0;  // STREAM triad a[i] = b[i] + s*c[i] (3 streams counted)
  double peak_gflops = 0;        // fp32 FMA throughput, all threads
  int threads = 1;
  std::string method;
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
