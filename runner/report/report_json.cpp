#include <chrono>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "mechanisms/option_catalog.hpp"
#include "mechanisms/registry.hpp"
#include "core/errors.hpp"
#include "runner/report/report.hpp"
#include "build_info.hpp"

namespace arch_bench {

namespace {
using nlohmann::json;

constexpr double kMiB = 1024.0 * 1024.0;

// JSON has no NaN or infinity; a non-finite value is written as null (output_finite says why).
json finite_or_null(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

json optional_number(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

// A row's or an arm's options: those its mechanism runs with (its declarations and the harness's,
// defaults filled in), whatever else the workload gave.
json options_json(const std::string& mechanism, const MechanismOptions& options) {
  return resolved_options_of(mechanism, options).to_json();
}

// The workload's lists of axis options (performer's features), each declared axis key written (an
// empty list when not given), as reports have always carried workload.features.
void add_axes(json& workload, const Workload& w) {
  for (const DeclaredOption& option : declared_options()) {
    if (!option.axis()) continue;
    json values = json::array();
    if (const auto axis = w.axes.find(option.key); axis != w.axes.end()) {
      for (const OptionValue& value : axis->second) std::visit([&](const auto& held) { values.push_back(held); }, value);
    }
    workload[option.key] = std::move(values);
  }
}

json cell_json(const Cell& cell) {
  return {{"mechanism", cell.mechanism},
          {"phase", phase_name(cell.phase)},
          {"sequence_length", cell.sequence_length},
          {"batch", cell.batch},
          {"heads", cell.heads},
          {"head_dim", cell.head_dim},
          {"dtype", dtype_name(cell.dtype)}};
}

json arm_json(const Arm& arm) {
  const Mechanism* mechanism = find_mechanism(arm.mechanism);
  return {{"mechanism", arm.mechanism},
          {"role", role_name(arm.role)},
          {"variant", arm.variant},
          {"state_kind", mechanism ? state_kind_name(mechanism->info().state_kind) : "unknown"},
          {"title", mechanism ? mechanism->info().title : ""},
          {"options", options_json(arm.mechanism, arm.options)}};
}

std::string timing_description(const Workload& w) {
  const bool cold = w.cache_state == CacheState::cold;
  switch (w.timing.method) {
    case TimingMethod::steady_clock:
      return cold ? "steady_clock around each sample; cold samples evict the cell's buffers (clflush) outside the "
                    "timed region"
                  : "steady_clock around each sample; hot caches";
    case TimingMethod::cuda_events:
      return std::string("CUDA events around each launch of the timed unit") +
             (cold ? "; cold samples flush L2 (a write of twice its size) outside the events" : "; hot L2");
    case TimingMethod::cuda_events_batched:
      return fmt::format("CUDA events around {} back-to-back launches, per-step time = elapsed / {}{}",
                         w.timing.steps_per_sample, w.timing.steps_per_sample,
                         cold ? "; cold samples flush L2 before the batch (only its first step starts cold)" : "; hot L2");
    case TimingMethod::cuda_graph:
      return fmt::format("{} launches captured once into a CUDA graph, replayed between CUDA events, per-step time = "
                         "elapsed / {}{}",
                         w.timing.steps_per_sample, w.timing.steps_per_sample,
                         cold ? "; cold samples flush L2 before the replay (only its first step starts cold)" : "; hot L2");
  }
  return "";
}

json workload_json(const Workload& w) {
  json phases = json::array();
  for (Phase phase : w.phases) phases.push_back(phase_name(phase));
  json out = {{"sequence_lengths", w.sequence_lengths},
          {"batch", w.batch},
          {"heads", w.heads},
          {"head_dim", w.head_dim},
          {"dtype", dtype_name(w.dtype)},
          {"phases", phases},
          {"warmup", w.warmup},
          {"repeats", w.repeats},
          {"rounds", w.rounds},
          {"cache_state", cache_state_name(w.cache_state)},
          {"threads", w.threads},
          {"team_trial", w.team_trial},
          {"seed", w.seed},
          {"options", w.options.to_json()},
          {"timing_method", timing_method_name(w.timing.method)},
          {"steps_per_sample", w.timing.steps_per_sample},
          {"timing_description", timing_description(w)}};
  add_axes(out, w);
  return out;
}

json ceilings_json(const Ceilings& c) {
  json out = {{"memory_read_gbps", c.memory_read_gbps},
              {"memory_triad_gbps", c.memory_triad_gbps > 0 ? json(c.memory_triad_gbps) : json(nullptr)},
              {"peak_gflops", c.peak_gflops},
              {"threads", c.threads},
              {"method", c.method}};
  if (c.device_copy_gbps) out["device_copy_gbps"] = *c.device_copy_gbps;
  if (c.gemm_bf16_gflops) out["gemm_bf16_gflops"] = *c.gemm_bf16_gflops;
  if (!c.readings.empty()) {
    out["readings"] = json::array();
    for (const CeilingReading& r : c.readings) {
      out["readings"].push_back({{"when", r.when},
                                 {"memory_read_gbps", r.memory_read_gbps},
                                 {"memory_triad_gbps", r.memory_triad_gbps},
                                 {"peak_gflops", r.peak_gflops}});
    }
  }
  return out;
}

json optional_bytes(const std::optional<std::int64_t>& bytes) { return bytes ? json(*bytes) : json(nullptr); }

json failure_json(const std::optional<Failure>& failure) {
  if (!failure) return nullptr;
  return {{"kind", failure->kind},
          {"message", failure->message},
          {"cell", failure->cell ? cell_json(*failure->cell) : json(nullptr)}};
}

json decision_json(const Decision& d) {
  return {{"verdict", d.verdict},
          {"reasons", d.reasons},
          {"crossover_length", d.crossover_length ? json(*d.crossover_length) : json(nullptr)},
          {"next_action", d.next_action},
          {"details", d.details}};
}
}  // namespace

json to_json(const Row& row) {
  const bool measured = row.status == RowStatus::ok && !row.samples_ms.empty();
  auto stat = [&](double value) { return measured ? finite_or_null(value) : json(nullptr); };
  json out = cell_json(row.cell);
  out.update({{"role", role_name(row.role)},
              {"variant", row.variant},
              {"backend", row.backend},
              {"options", options_json(row.cell.mechanism, row.cell.options)},
              {"state_kind", state_kind_name(row.state_kind)},
              {"state_bytes", row.state_bytes},
              {"state_mb", row.state_bytes / kMiB},
              {"predicted_peak_bytes", row.predicted_peak_bytes},
              {"predicted_process_bytes", optional_bytes(row.predicted_process_bytes)},
              {"status", row_status_name(row.status)},
              {"reason", row.reason.empty() ? json(nullptr) : json(row.reason)},
              {"failure_kind", row.failure_kind.empty() ? json(nullptr) : json(row.failure_kind)},
              {"warmup", row.warmup},
              {"timing_method", timing_method_name(row.timing.method)},
              {"steps_per_sample", row.timing.steps_per_sample},
              {"launch_overhead_ms", row.launch_overhead_ms ? finite_or_null(*row.launch_overhead_ms) : json(nullptr)},
              {"device_free_before_bytes", optional_bytes(row.device_free_before_bytes)},
              {"device_free_after_bytes", optional_bytes(row.device_free_after_bytes)},
              {"repeats", static_cast<std::int64_t>(row.samples_ms.size())},
              {"samples_ms", row.samples_ms},
              {"mean_step_ms", stat(row.stats.mean)},
              {"median_step_ms", stat(row.stats.median)},
              {"p05_step_ms", stat(row.stats.p05)},
              {"p95_step_ms", stat(row.stats.p95)},
              {"stdev_step_ms", stat(row.stats.stdev)},
              {"rel_stdev", stat(row.stats.rel_stdev)},
              {"min_step_ms", stat(row.stats.min)},
              {"max_step_ms", stat(row.stats.max)},
              {"peak_memory_bytes", row.peak_memory_bytes},
              {"peak_memory_mb", row.peak_memory_bytes / kMiB},
              {"allocations_during_timing", row.allocations_during_timing},
              {"host_contention", row.host_contention ? finite_or_null(*row.host_contention) : json(nullptr)},
              {"host_memory_gbps", row.host_memory_gbps ? finite_or_null(*row.host_memory_gbps) : json(nullptr)},
              {"team_stalled_samples", row.team_stalled_samples ? json(*row.team_stalled_samples) : json(nullptr)},
              {"team_check_median_us",
               row.team_check_median_us ? finite_or_null(*row.team_check_median_us) : json(nullptr)},
              {"one_thread_samples", row.one_thread_samples ? json(*row.one_thread_samples) : json(nullptr)},
              {"trial_team_median_us",
               row.trial_team_median_us ? finite_or_null(*row.trial_team_median_us) : json(nullptr)},
              {"trial_one_thread_median_us",
               row.trial_one_thread_median_us ? finite_or_null(*row.trial_one_thread_median_us) : json(nullptr)},
              {"cpu_kernel_isa", row.cpu_kernel_isa.empty() ? json(nullptr) : json(row.cpu_kernel_isa)},
              {"gpu_kernel", row.gpu_kernel.empty() ? json(nullptr) : json(row.gpu_kernel)},
              {"output_finite", row.accuracy.output_finite},
              {"max_abs_error", finite_or_null(row.accuracy.max_abs_error)},
              {"max_rel_error", finite_or_null(row.accuracy.max_rel_error)},
              {"rows_checked", row.accuracy.rows_checked},
              {"tolerance", row.tolerance},
              {"within_tolerance", row.within_tolerance()},
              {"bytes_moved", row.cost.bytes_moved},
              {"flops", row.cost.flops},
              {"achieved_gbps", stat(row.achieved_gbps)},
              {"achieved_gflops", stat(row.achieved_gflops)},
              {"fraction_of_memory_bandwidth", stat(row.fraction_of_memory_bandwidth)},
              {"fraction_of_peak_flops", stat(row.fraction_of_peak_flops)}});
  // Approximating mechanisms (performer) also carry their distance from exact softmax attention
  // and how many normalisers were not positive.
  if (row.accuracy.approx_rel_l2_vs_softmax) {
    out["approx_rel_l2_vs_softmax"] = finite_or_null(*row.accuracy.approx_rel_l2_vs_softmax);
  }
  if (row.accuracy.approx_max_abs_vs_softmax) {
    out["approx_max_abs_vs_softmax"] = finite_or_null(*row.accuracy.approx_max_abs_vs_softmax);
  }
  if (row.accuracy.nonpositive_denominators > 0 || row.accuracy.approx_rel_l2_vs_softmax) {
    out["nonpositive_denominators"] = row.accuracy.nonpositive_denominators;
  }
  return out;
}

json to_json(const RunReport& r) {
  json candidates = json::array();
  json baseline = nullptr;
  for (const Arm& arm : r.arms) {
    if (arm.role == Role::baseline && baseline.is_null()) {
      baseline = arm_json(arm);
    } else {
      candidates.push_back(arm_json(arm));
    }
  }
  json rows = json::array();
  for (const Row& row : r.rows) rows.push_back(to_json(row));
  json hardware = {{"backend", r.backend},
                   {"host", r.host},
                   {"gpu", r.gpu},
                   {"ceilings", r.ceilings ? ceilings_json(*r.ceilings) : json(nullptr)},
                   {"timer_overhead_ms", optional_number(r.timer_overhead_ms)}};
  if (r.omp_fork_join_us) hardware["omp_fork_join_us"] = *r.omp_fork_join_us;
  if (!r.cpu_isa.empty()) hardware["cpu_isa"] = r.cpu_isa;
  if (!r.cpu_kernel_variant.empty()) hardware["cpu_kernel_variant"] = r.cpu_kernel_variant;
  return {{"schema_version", kResultSchemaVersion},
          {"identity",
           {{"semantic_id", r.identity.semantic_id},
            {"workload_id", r.identity.workload_id},
            {"run_label", r.identity.run_label},
            {"profile_id", r.identity.profile_id},
            {"mode", r.identity.mode},
            {"created_at", r.identity.created_at},
            {"tool", "arch-bench"},
            {"tool_version", build_info::tool_version},
            {"git_commit", build_info::git_commit},
            {"git_tree_modified", build_info::git_tree_modified},
            {"build_type", build_info::build_type},
            {"seed", r.identity.seed},
            {"command_line", r.identity.command_line}}},
          {"workload", workload_json(r.workload)},
          {"hardware", hardware},
          {"baseline", baseline},
          {"candidates", candidates},
          {"metrics",
           {{"rows", rows},
            {"process_peak_rss_bytes", r.process_peak_rss_bytes},
            {"timer_overhead_ms", optional_number(r.timer_overhead_ms)}}},
          {"evidence_level", r.evidence_level},
          {"failure", failure_json(r.failure)},
          {"decision", decision_json(r.decision)},
          {"notes", r.notes},
          {"settings_sources", r.settings_sources}};
}

std::string utc_timestamp_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

}  // namespace arch_bench
