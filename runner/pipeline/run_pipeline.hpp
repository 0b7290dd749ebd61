#pragma once
// `arch-bench run` as a data flow, outside the CLI: a RunRequest (runner/cli/run_command.cpp parses
// it) goes through
//   prepare_run: preflight (with a profile) -> plan -> shard -> report path -> resources -> report begun
//   finish_run:  measure (measure_run) -> decide (decide_run) -> assemble (assemble_report)
//                -> validate against schemas/result.schema.json -> write (write_report)
// and comes back as a RunOutcome for the command to print. A dry run, or a failed preflight, stops
// after the plan and writes a dry_run report instead. Bad input is a UsageError (exit 2) raised
// before anything is measured or written.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/pipeline/execute.hpp"
#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/run_request.hpp"
#include "runner/preflight/preflight.hpp"
#include "runner/report/report.hpp"
#include "runner/shard/shard.hpp"

namespace arch_bench {

// Everything decided before measuring: the plan and where its report goes, every up-front check
// passed.
struct PreparedRun {
  std::optional<PreflightResult> preflight;  // the profile's checks (with a profile only)
  Plan full_plan;
  std::optional<ShardSelection> shard;       // --shard: the part of full_plan this process measures
  nlohmann::json shard_block = nullptr;      // the report's `shard` (null without --shard)
  std::filesystem::path output;              // the report's path, checked
  RunReport report;                          // begun (assemble_report.hpp: begin_report)

  const Plan& plan() const { return shard ? shard->plan : full_plan; }
  // Whether the run measures: neither --dry-run nor a failed preflight.
  bool measures(const RunRequest& request) const { return !request.dry_run && (!preflight || preflight->passed()); }
};

struct RunOutcome {
  bool measured = false;                   // false: a dry run (asked for, or the preflight failed)
  RunReport report;                        // as written
  Plan plan;                               // the plan this process ran (its shard's under --shard)
  std::filesystem::path output;            // where the report was to go
  std::vector<std::string> schema_errors;  // not empty: the report was invalid and nothing was written
  std::filesystem::path written;           // where it went: output, a fallback file, or "-" (stdout)
  int stop_signal = 0;                     // the SIGINT/SIGTERM that stopped the measuring (0: none)
};

// Sets the OpenMP team size, runs the profile's preflight, plans (and shards), checks the report's
// path and, for a measuring run, memory and disk. Throws UsageError for bad input.
PreparedRun prepare_run(const RunRequest& request);

// Measures (unless a dry run), decides, assembles, validates and writes. `progress` gets the lines
// for a human while it measures.
RunOutcome finish_run(const RunRequest& request, PreparedRun prepared, const ProgressSink& progress);

}  // namespace arch_bench
