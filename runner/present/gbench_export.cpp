// A result report as Google Benchmark JSON. arch-bench's samples are wall-clock (CPU) or device
// event (CUDA) times per step; gbench has no such thing as "no CPU time", so cpu_time repeats
// real_time and the context says so. Names follow gbench's "family/arg:value" style so that
// compare.py's filters work on them.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runner/present/exporters.hpp"
#include "runner/present/number_text.hpp"

namespace arch_bench {

namespace {
namespace t = present_text;
using nlohmann::json;

constexpr double kMicrosecondsPerMs = 1000.0;

std::string name_part(const std::string& text) {
  std::string out;
  for (char c : text) out += std::isspace(static_cast<unsigned char>(c)) ? '_' : c;
  return out;
}

std::string benchmark_name(const json& row) {
  std::string family = t::text(row, "mechanism");
  const std::string variant = t::text(row, "variant");
  if (!variant.empty()) family += "[" + name_part(variant) + "]";
  return fmt::format("{}/{}/L:{}/B:{}/H:{}/D:{}/{}", family, t::text(row, "phase"),
                     row.value("sequence_length", 0), row.value("batch", 0), row.value("heads", 0),
                     row.value("head_dim", 0), t::text(row, "dtype"));
}

json context_of(const json& document) {
  const json& host = document["hardware"]["host"];
  const json& identity = document["identity"];
  json caches = json::array();
  const json& sizes = host.contains("caches") ? host["caches"] : json::object();
  const std::pair<const char*, int> levels[] = {{"l1d_bytes", 1}, {"l2_bytes", 2}, {"l3_bytes", 3}};
  for (const auto& [key, level] : levels) {
    if (const auto size = t::number(sizes, key)) {
      caches.push_back({{"type", level == 1 ? "Data" : "Unified"}, {"level", level},
                        {"size", static_cast<std::int64_t>(*size)}, {"num_sharing", 0}});
    }
  }
  std::string build_type = t::text(identity, "build_type");
  std::transform(build_type.begin(), build_type.end(), build_type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string governor = t::text(host, "frequency_governor");
  json context = {
      {"date", t::text(identity, "created_at")},
      {"host_name", t::text(host, "cpu_model")},
      {"executable", t::text(identity, "command_line")},
      {"num_cpus", static_cast<std::int64_t>(t::number(host, "logical_cores").value_or(0))},
      {"mhz_per_cpu", 0},  // not recorded by arch-bench
      {"cpu_scaling_enabled", !governor.empty() && governor != "performance"},
      {"caches", caches},
      {"load_avg", json::array()},
      {"library_build_type", build_type == "debug" ? "debug" : "release"},
      {"json_schema_version", 1},
  };
  // Extra keys are ignored by gbench's readers and keep the file self-describing.
  context["arch_bench"] = {
      {"schema_version", t::text(document, "schema_version")},
      {"semantic_id", t::text(identity, "semantic_id")},
      {"workload_id", t::text(identity, "workload_id")},
      {"run_label", t::text(identity, "run_label")},
      {"mode", t::text(identity, "mode")},
      {"git_commit", t::text(identity, "git_commit")},
      {"backend", t::text(document["hardware"], "backend")},
      {"evidence_level", t::text(document, "evidence_level")},
      {"time_note", "real_time and cpu_time are both arch-bench's per-step time of one sample (steady clock on the "
                    "CPU, device events on CUDA); arch-bench does not measure CPU time separately"},
  };
  return context;
}

// gbench's user counters: numeric fields beside the times, the same on every run of a row.
void add_counters(json& run, const json& row, double step_ms) {
  for (const char* key : {"state_bytes", "peak_memory_bytes", "max_rel_error"}) {
    if (const auto value = t::number(row, key)) run[key] = *value;
  }
  const auto bytes = t::number(row, "bytes_moved");
  const auto flops = t::number(row, "flops");
  if (bytes && step_ms > 0) run["bytes_per_second"] = *bytes / (step_ms / 1000);
  if (flops && step_ms > 0) run["flops_per_second"] = *flops / (step_ms / 1000);
}

json base_run(const std::string& name, int family, int instance, std::size_t repetitions) {
  return {{"name", name},
          {"family_index", family},
          {"per_family_instance_index", instance},
          {"run_name", name},
          {"repetitions", repetitions},
          {"threads", 1}};
}
}  // namespace

std::string export_gbench(const LoadedReport& report) {
  const json& document = report.document;
  json benchmarks = json::array();
  std::map<std::string, int> family_of, instances_of, uses_of_name;
  for (const json& row : document["metrics"]["rows"]) {
    std::string name = benchmark_name(row);
    // Two rows of one cell (different options) must not merge in a reader that groups by name.
    if (const int uses = uses_of_name[name]++; uses > 0) name += fmt::format("/#{}", uses + 1);
    const std::string family_key = t::text(row, "mechanism") + "[" + t::text(row, "variant") + "]";
    const auto [found, added] = family_of.emplace(family_key, static_cast<int>(family_of.size()));
    const int family = found->second;
    const int instance = instances_of[family_key]++;
    const auto steps_per_sample = t::number(row, "steps_per_sample");  // null or absent: one step per sample
    const std::int64_t steps = std::max<std::int64_t>(1, static_cast<std::int64_t>(steps_per_sample.value_or(1)));

    const json& samples = row.contains("samples_ms") ? row["samples_ms"] : json::array();
    if (t::text(row, "status") != "ok" || samples.empty()) {
      json run = base_run(name, family, instance, 1);
      run.update({{"run_type", "iteration"}, {"repetition_index", 0}, {"iterations", 0}, {"real_time", 0},
                  {"cpu_time", 0}, {"time_unit", "us"}, {"error_occurred", true},
                  {"error_message", fmt::format("arch-bench row {}: {}", t::text(row, "status"),
                                                t::text(row, "reason"))}});
      benchmarks.push_back(std::move(run));
      continue;
    }
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const double ms = samples[i].get<double>();
      json run = base_run(name, family, instance, samples.size());
      run.update({{"run_type", "iteration"}, {"repetition_index", i}, {"iterations", steps},
                  {"real_time", ms * kMicrosecondsPerMs}, {"cpu_time", ms * kMicrosecondsPerMs},
                  {"time_unit", "us"}});
      add_counters(run, row, ms);
      benchmarks.push_back(std::move(run));
    }
    // The aggregates gbench itself writes after repetitions, from the report's own statistics.
    const double mean = t::number(row, "mean_step_ms").value_or(NAN);
    const double median = t::number(row, "median_step_ms").value_or(NAN);
    const double stdev = t::number(row, "stdev_step_ms").value_or(NAN);
    const std::pair<const char*, double> aggregates[] = {
        {"mean", mean}, {"median", median}, {"stddev", stdev}, {"cv", mean > 0 ? stdev / mean : NAN}};
    for (const auto& [aggregate, value] : aggregates) {
      if (!std::isfinite(value)) continue;
      const bool cv = std::string(aggregate) == "cv";
      json run = base_run(name + "_" + aggregate, family, instance, samples.size());
      run["run_name"] = name;
      run.update({{"run_type", "aggregate"}, {"aggregate_name", aggregate},
                  {"aggregate_unit", cv ? "percentage" : "time"}, {"iterations", samples.size()},
                  {"real_time", cv ? value : value * kMicrosecondsPerMs},
                  {"cpu_time", cv ? value : value * kMicrosecondsPerMs}, {"time_unit", "us"}});
      if (!cv) add_counters(run, row, value);
      benchmarks.push_back(std::move(run));
    }
  }
  json output = {{"context", context_of(document)}, {"benchmarks", std::move(benchmarks)}};
  return output.dump(2) + "\n";
}

}  // namespace arch_bench
