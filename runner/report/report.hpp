#pragma once
// The evidence report of one run (docs/design.md, "Result report") and its JSON form, which
// schemas/result.schema.json describes. Field names are the same in code, JSON and docs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/pipeline/run_result.hpp"
#include "runner/pipeline/workload.hpp"
#include "runner/modes/mode.hpp"

namespace arch_bench {

inline constexpr const char* kResultSchemaVersion = "1.1.0";  // 1.1.0: the `model` block (run --model), rows' predicted_process_bytes, rows' gpu_kernel

struct Identity {
  std::string semantic_id;
  std::string workload_id;
  std::string run_label;
  std::string profile_id;
  std::string mode;
  std::string created_at;  // ISO 8601 UTC
  std::string command_line;
  std::uint64_t seed = 0;
};

struct RunReport {
  Identity identity;
  Workload workload;
  std::string backend = "cpu";
  nlohmann::json host = nlohmann::json::object();  // host_facts()
  nlohmann::json gpu = nullptr;                     // devices, when the backend is cuda
  std::optional<Ceilings> ceilings;                 // absent in a dry run
  std::optional<double> timer_overhead_ms;          // absent in a dry run
  std::optional<double> omp_fork_join_us;           // CPU runs: measure_omp_fork_join_us; absent otherwise
  std::string cpu_isa;                              // CPU runs: the hand-written kernel set entered (cpu_isa())
  std::string cpu_kernel_variant;                   // CPU runs: the compiled kernels' variant (dispatched_kernel_variant())
  std::vector<Arm> arms;
  std::vector<Row> rows;
  std::string evidence_level = "cpu_measured";  // dry_run | cpu_measured | gpu_measured
  std::optional<Failure> failure;
  Decision decision;
  std::int64_t process_peak_rss_bytes = 0;
  std::vector<std::string> notes;  // what a reader must know (e.g. "CUDA profile measured on CPU")
  nlohmann::json settings_sources = nlohmann::json::object();  // which setting came from where
};

nlohmann::json to_json(const Row& row);
nlohmann::json to_json(const RunReport& report);
std::string utc_timestamp_now();

}  // namespace arch_bench
