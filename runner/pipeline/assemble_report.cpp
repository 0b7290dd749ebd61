#include "runner/pipeline/assemble_report.hpp"

#include <string>

#include <fmt/format.h>

#include "core/backends/cpu/usable_cpus.hpp"
#include "runner/models/model_figures.hpp"
#include "runner/plugins/plugin_report.hpp"
#include "runner/preflight/dry_run.hpp"

namespace arch_bench {

RunReport begin_report(const RunRequest& request) {
  const Workload& workload = request.workload;
  RunReport report;
  report.identity = {request.semantic_id, request.workload_id,    request.run_label,    request.profile_id,
                     request.mode->id(),  utc_timestamp_now(),    request.command_line, workload.seed};
  report.workload = workload;
  report.backend = request.backend.name;
  report.notes = request.backend.notes;
  if (const int cpus = usable_cpus(); report.backend == "cpu" && workload.threads > cpus) {
    report.notes.push_back(fmt::format("--threads {} is more than the {} CPU(s) this process may run on: the threads "
                                       "take turns on the CPUs and a step split over them waits for each turn, so "
                                       "its times measure the scheduler as much as the kernels",
                                       workload.threads, cpus));
  }
  if (!request.profile && report.identity.profile_id.find("CUDA") != std::string::npos && report.backend == "cpu") {
    report.notes.push_back(fmt::format("profile {} is recorded as asked (--profile-id is a label), but this run "
                                       "measured on the CPU backend; its evidence level is cpu_measured, not "
                                       "gpu_measured",
                                       report.identity.profile_id));
  }
  report.arms = request.mode->arms(workload);
  report.settings_sources = request.settings_sources;
  return report;
}

nlohmann::json measured_document(const RunReport& report, const Mode& mode, const ReportBlocks& blocks) {
  nlohmann::json document = to_json(report);
  document["workload"]["omp_wait_policy"] = blocks.omp_wait_policy;
  if (!blocks.profile.is_null()) document["profile"] = blocks.profile;
  if (!blocks.shard.is_null()) document["shard"] = blocks.shard;
  const nlohmann::json extras = mode.report_extras(report.rows, report.workload);
  if (extras.is_object()) document.update(extras);
  annotate_plugin_mechanisms(document);
  return document;
}

nlohmann::json dry_run_document(const RunReport& report, const Plan& plan, const std::vector<Check>& failed_checks,
                                const ReportBlocks& blocks) {
  nlohmann::json document = to_json(report);
  document["workload"]["omp_wait_policy"] = blocks.omp_wait_policy;
  document["plan"] = plan_to_json(plan);
  // run --model --dry-run: the model's bytes per sequence and largest batches need no measurement.
  if (report.workload.model) document["model"] = planned_model_block(*report.workload.model, plan, report.workload);
  if (!blocks.shard.is_null()) document["shard"] = blocks.shard;
  if (!failed_checks.empty()) document["failure"]["checks"] = failed_checks_json(failed_checks);
  if (!blocks.profile.is_null()) document["profile"] = blocks.profile;
  annotate_plugin_mechanisms(document);
  return document;
}

}  // namespace arch_bench
