#include "runner/shard/report_rows.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "mechanisms/option_catalog.hpp"
#include "runner/models/model_from_report.hpp"

namespace arch_bench {

namespace {
using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A number, or `fallback` when the field is absent or null (a statistic of a row not measured).
double number_or(const json& object, const char* key, double fallback) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return fallback;
  if (!found->is_number()) throw UsageError(fmt::format("field {} is not a number", key));
  return found->get<double>();
}

std::int64_t integer_or(const json& object, const char* key, std::int64_t fallback) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return fallback;
  if (!found->is_number_integer()) throw UsageError(fmt::format("field {} is not an integer", key));
  return found->get<std::int64_t>();
}

std::optional<std::int64_t> optional_integer(const json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return std::nullopt;
  return integer_or(object, key, 0);
}

std::optional<double> optional_number(const json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return std::nullopt;
  return number_or(object, key, 0);
}

std::string text_or(const json& object, const char* key, const std::string& fallback) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return fallback;
  if (!found->is_string()) throw UsageError(fmt::format("field {} is not a string", key));
  return found->get<std::string>();
}

const json& required(const json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end()) throw UsageError(fmt::format("field {} is missing", key));
  return *found;
}

Phase phase_from(const std::string& name) {
  if (name == "decode") return Phase::decode;
  if (name == "prefill") return Phase::prefill;
  throw UsageError(fmt::format("phase '{}' is neither decode nor prefill", name));
}

DType dtype_from(const std::string& name) {
  if (const auto dtype = parse_dtype(name)) return *dtype;
  throw UsageError(fmt::format("dtype '{}' is not known", name));
}

TimingMethod timing_from(const std::string& name) {
  if (const auto method = parse_timing_method(name)) return *method;
  throw UsageError(fmt::format("timing_method '{}' is not known", name));
}

std::vector<std::int64_t> integers(const json& list, const char* key) {
  if (!list.is_array()) throw UsageError(fmt::format("field {} is not a list", key));
  std::vector<std::int64_t> values;
  for (const json& value : list) {
    if (!value.is_number_integer()) throw UsageError(fmt::format("field {} holds a value that is not an integer", key));
    values.push_back(value.get<std::int64_t>());
  }
  return values;
}
}  // namespace

Row row_from_json(const json& r) {
  Row row;
  row.cell.mechanism = required(r, "mechanism").get<std::string>();
  row.cell.phase = phase_from(required(r, "phase").get<std::string>());
  row.cell.sequence_length = required(r, "sequence_length").get<std::int64_t>();
  row.cell.batch = required(r, "batch").get<std::int64_t>();
  row.cell.heads = required(r, "heads").get<std::int64_t>();
  row.cell.head_dim = required(r, "head_dim").get<std::int64_t>();
  row.cell.dtype = dtype_from(required(r, "dtype").get<std::string>());
  row.cell.options = options_from_json(r.value("options", json(nullptr)), "row options");
  const std::string role = required(r, "role").get<std::string>();
  row.role = role == "baseline" ? Role::baseline : Role::candidate;
  row.variant = text_or(r, "variant", "");
  row.backend = text_or(r, "backend", "cpu");
  row.state_kind = text_or(r, "state_kind", "") == "explicit_history" ? StateKind::explicit_history
                                                                      : StateKind::fixed_state;
  row.state_bytes = integer_or(r, "state_bytes", 0);
  row.predicted_peak_bytes = integer_or(r, "predicted_peak_bytes", 0);
  if (const auto process = r.find("predicted_process_bytes"); process != r.end() && process->is_number_integer()) {
    row.predicted_process_bytes = process->get<std::int64_t>();
  }
  const std::string status = required(r, "status").get<std::string>();
  row.status = status == "ok" ? RowStatus::ok : status == "skipped" ? RowStatus::skipped : RowStatus::failed;
  row.reason = text_or(r, "reason", "");
  row.failure_kind = text_or(r, "failure_kind", "");
  row.warmup = integer_or(r, "warmup", 0);
  row.timing.method = timing_from(text_or(r, "timing_method", "steady_clock"));
  row.timing.steps_per_sample = integer_or(r, "steps_per_sample", 1);
  for (const json& sample : required(r, "samples_ms")) {
    row.samples_ms.push_back(sample.is_number() ? sample.get<double>() : kNaN);
  }
  row.launch_overhead_ms = optional_number(r, "launch_overhead_ms");
  row.host_contention = optional_number(r, "host_contention");
  row.host_memory_gbps = optional_number(r, "host_memory_gbps");
  row.team_stalled_samples = optional_integer(r, "team_stalled_samples");
  row.team_check_median_us = optional_number(r, "team_check_median_us");
  row.one_thread_samples = optional_integer(r, "one_thread_samples");
  row.trial_team_median_us = optional_number(r, "trial_team_median_us");
  row.trial_one_thread_median_us = optional_number(r, "trial_one_thread_median_us");
  if (const auto isa = r.find("cpu_kernel_isa"); isa != r.end() && isa->is_string()) row.cpu_kernel_isa = isa->get<std::string>();
  if (const auto gpu = r.find("gpu_kernel"); gpu != r.end() && gpu->is_string()) row.gpu_kernel = gpu->get<std::string>();
  row.device_free_before_bytes = optional_integer(r, "device_free_before_bytes");
  row.device_free_after_bytes = optional_integer(r, "device_free_after_bytes");
  row.stats = SampleStats{number_or(r, "mean_step_ms", 0),  number_or(r, "median_step_ms", 0),
                          number_or(r, "p05_step_ms", 0),   number_or(r, "p95_step_ms", 0),
                          number_or(r, "stdev_step_ms", 0), number_or(r, "rel_stdev", 0),
                          number_or(r, "min_step_ms", 0),   number_or(r, "max_step_ms", 0)};
  row.peak_memory_bytes = integer_or(r, "peak_memory_bytes", 0);
  row.allocations_during_timing = integer_or(r, "allocations_during_timing", 0);
  row.accuracy.output_finite = required(r, "output_finite").get<bool>();
  // A non-finite error is written as null: reading it back as NaN keeps within_tolerance() false.
  row.accuracy.max_abs_error = number_or(r, "max_abs_error", kNaN);
  row.accuracy.max_rel_error = number_or(r, "max_rel_error", kNaN);
  row.accuracy.rows_checked = integer_or(r, "rows_checked", 0);
  row.accuracy.nonpositive_denominators = integer_or(r, "nonpositive_denominators", 0);
  if (r.contains("approx_rel_l2_vs_softmax")) {
    row.accuracy.approx_rel_l2_vs_softmax = number_or(r, "approx_rel_l2_vs_softmax", kNaN);
  }
  if (r.contains("approx_max_abs_vs_softmax")) {
    row.accuracy.approx_max_abs_vs_softmax = number_or(r, "approx_max_abs_vs_softmax", kNaN);
  }
  row.tolerance = number_or(r, "tolerance", 0);
  row.cost.bytes_moved = number_or(r, "bytes_moved", 0);
  row.cost.flops = number_or(r, "flops", 0);
  row.achieved_gbps = number_or(r, "achieved_gbps", 0);
  row.achieved_gflops = number_or(r, "achieved_gflops", 0);
  row.fraction_of_memory_bandwidth = number_or(r, "fraction_of_memory_bandwidth", 0);
  row.fraction_of_peak_flops = number_or(r, "fraction_of_peak_flops", 0);
  return row;
}

Workload workload_from_report(const json& report, const Mode& mode) {
  Workload w = mode.defaults().workload;
  const json& block = required(report, "workload");
  w.sequence_lengths = integers(required(block, "sequence_lengths"), "workload.sequence_lengths");
  w.batch = integer_or(block, "batch", w.batch);
  w.heads = integer_or(block, "heads", w.heads);
  w.head_dim = integer_or(block, "head_dim", w.head_dim);
  w.dtype = dtype_from(required(block, "dtype").get<std::string>());
  w.phases.clear();
  for (const json& phase : required(block, "phases")) w.phases.push_back(phase_from(phase.get<std::string>()));
  w.warmup = integer_or(block, "warmup", w.warmup);
  w.repeats = integer_or(block, "repeats", w.repeats);
  w.rounds = integer_or(block, "rounds", 1);
  w.cache_state = text_or(block, "cache_state", "cold") == "hot" ? CacheState::hot : CacheState::cold;
  w.threads = static_cast<int>(integer_or(block, "threads", w.threads));
  w.team_trial = block.value("team_trial", false);  // reports older than the trial ran without it
  w.seed = required(block, "seed").get<std::uint64_t>();
  w.options = options_from_json(block.value("options", json(nullptr)), "workload.options");
  w.axes.clear();
  for (const DeclaredOption& option : declared_options()) {
    const auto list = block.find(option.key);
    if (!option.axis() || list == block.end() || !list->is_array() || list->empty()) continue;
    for (const json& value : *list) w.axes[option.key].push_back(option.spec().from_json(value, "workload." + option.key));
  }
  w.timing.method = timing_from(text_or(block, "timing_method", timing_method_name(w.timing.method)));
  w.timing.steps_per_sample = integer_or(block, "steps_per_sample", w.timing.steps_per_sample);
  w.candidates.clear();
  for (const json& arm : report.value("candidates", json::array())) {
    if (arm.is_object() && arm.contains("mechanism")) w.candidates.push_back(arm["mechanism"].get<std::string>());
  }
  // run --model: the arms are the model's layer types and the candidates in place of its attention.
  if (const auto model = report.find("model"); model != report.end() && model->is_object()) {
    w.model = std::make_shared<const ModelRun>(model_run_from_report(*model));
  }
  return w;
}

}  // namespace arch_bench
