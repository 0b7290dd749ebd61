#pragma once
// The report of a run, assembled in two places: as the run begins (identity, workload, backend and
// the notes a reader must know) and as its JSON document, with the blocks only the run knows.
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/run_request.hpp"
#include "runner/preflight/checks.hpp"
#include "runner/report/report.hpp"

namespace arch_bench {

// Identity (created now), workload, backend, arms and settings sources, and the notes: the backend
// choice's, --threads above the CPUs this process may run on, a CUDA --profile-id label on a CPU run.
RunReport begin_report(const RunRequest& request);

// What the document carries besides to_json(report).
struct ReportBlocks {
  std::string omp_wait_policy;              // workload.omp_wait_policy
  nlohmann::json profile = nullptr;         // profile_record_json of the applied profile, or null
  nlohmann::json shard = nullptr;           // shard_json, or null without --shard
};

// A measured run's document: the report, the blocks, the mode's report_extras, and the plugin
// mechanisms annotated.
nlohmann::json measured_document(const RunReport& report, const Mode& mode, const ReportBlocks& blocks);
// A dry run's: the report, the blocks, the plan, and the failed preflight checks (when any).
nlohmann::json dry_run_document(const RunReport& report, const Plan& plan, const std::vector<Check>& failed_checks,
                                const ReportBlocks& blocks);

}  // namespace arch_bench
