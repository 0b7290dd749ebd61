#include "runner/pipeline/run_pipeline.hpp"

#include <omp.h>

#include <utility>

#include <fmt/format.h>

#include "core/backends/cpu/host_facts.hpp"
#include "runner/pipeline/assemble_report.hpp"
#include "runner/pipeline/check_resources.hpp"
#include "runner/pipeline/decide_run.hpp"
#include "runner/pipeline/interrupt.hpp"
#include "runner/pipeline/measure_run.hpp"
#include "runner/pipeline/write_report.hpp"
#include "runner/preflight/preflight_report.hpp"
#include "runner/report/atomic_write.hpp"
#include "runner/report/schema_validation.hpp"

namespace arch_bench {

namespace {

ReportBlocks report_blocks(const RunRequest& request, const PreparedRun& prepared) {
  ReportBlocks blocks;
  blocks.omp_wait_policy = request.omp_wait_policy;
  if (request.profile) blocks.profile = profile_record_json(*request.profile, *prepared.preflight);
  blocks.shard = prepared.shard_block;
  return blocks;
}

// No mechanism evidence: the plan and its predicted bytes, and, when the profile's preflight
// failed, the checks that did. An invalid report is an error, never a file; a failed write is exit 2.
RunOutcome dry_run(const RunRequest& request, PreparedRun prepared) {
  RunReport& report = prepared.report;
  const std::vector<Check> failed = prepared.preflight ? prepared.preflight->failed() : std::vector<Check>{};
  decide_dry_run(report, prepared.plan(), prepared.preflight ? &*prepared.preflight : nullptr);
  report.process_peak_rss_bytes = process_peak_rss_bytes();

  RunOutcome outcome{false, {}, prepared.plan(), prepared.output, {}, {}, 0};
  const nlohmann::json document = dry_run_document(report, prepared.plan(), failed, report_blocks(request, prepared));
  outcome.schema_errors = schema_errors(document, "result");
  if (outcome.schema_errors.empty()) {
    write_file_atomically(prepared.output, document.dump(2) + "\n", request.output.overwrite,
                          "choose another --run-label or --output (or pass --overwrite)");
    outcome.written = prepared.output;
  }
  outcome.report = std::move(report);
  return outcome;
}

}  // namespace

PreparedRun prepare_run(const RunRequest& request) {
  const Mode& mode = *request.mode;
  const Workload& workload = request.workload;
  omp_set_num_threads(workload.threads);
  PreparedRun prepared;
  if (request.profile) prepared.preflight = run_preflight(*request.profile, mode, workload, read_machine_facts());
  prepared.full_plan = prepared.preflight ? prepared.preflight->plan : build_plan(mode, workload, request.backend.name);
  if (request.shard) {
    prepared.shard = select_shard(*request.shard, prepared.full_plan, mode.id(), request.backend.name, workload);
    prepared.shard_block = shard_json(*prepared.shard, process_environment());
  }
  prepared.output = checked_report_path(request.output,
                                        request.experiment.empty() ? mode.defaults().experiment : request.experiment,
                                        request.run_label);
  if (prepared.measures(request)) {
    Plan& measured = prepared.shard ? prepared.shard->plan : prepared.full_plan;
    check_resources(measured, workload, request.backend.name, prepared.output, request.skip_cells_that_do_not_fit);
  }
  prepared.report = begin_report(request);
  return prepared;
}

RunOutcome finish_run(const RunRequest& request, PreparedRun prepared, const ProgressSink& progress) {
  RunReport& report = prepared.report;
  if (prepared.preflight) {  // the command printed them with the other checks; the report keeps them as notes
    for (const Check& check : prepared.preflight->checks) {
      if (check.status == CheckStatus::warn) report.notes.push_back(fmt::format("preflight {}: {}", check.id, check.message));
    }
  }
  if (!prepared.measures(request)) return dry_run(request, std::move(prepared));

  const Plan& plan = prepared.plan();
  const Workload& workload = request.workload;
  double cells_seconds = 0;
  {
    // Until the rows are back, a first SIGINT/SIGTERM stops the measuring loop (runner/cli/signals.hpp).
    const GracefulInterrupt graceful_interrupt;
    progress(fmt::format("arch-bench run --mode {}: {} cells, {} thread(s), {} cache, writing {}",
                         request.mode->id(), plan.cells.size(), workload.threads,
                         cache_state_name(workload.cache_state), prepared.output.string()),
             false);
    if (prepared.shard) {
      progress(fmt::format("shard {} of {}: {} of the plan's {} cells (plan {})", prepared.shard->spec.index,
                           prepared.shard->spec.count, plan.cells.size(), prepared.shard->plan_cells,
                           prepared.shard->plan_hash),
               false);
    }
    cells_seconds = measure_plan(plan, workload, report, progress);
  }
  const int stop_signal = interrupt_signal();
  reread_ceilings(report, workload, stop_signal != 0, cells_seconds, progress);
  decide_run(report, *request.mode, plan.cells.size(), prepared.shard ? &*prepared.shard : nullptr,
             request.profile ? &*request.profile : nullptr, stop_signal);
  report.process_peak_rss_bytes = process_peak_rss_bytes();

  RunOutcome outcome{true, {}, plan, prepared.output, {}, {}, stop_signal};
  const nlohmann::json document = measured_document(report, *request.mode, report_blocks(request, prepared));
  outcome.schema_errors = schema_errors(document, "result");
  if (outcome.schema_errors.empty()) {
    outcome.written = write_with_fallback(document.dump(2) + "\n", prepared.output, request.output.overwrite);
  }
  outcome.report = std::move(report);
  return outcome;
}

}  // namespace arch_bench
