#include "runner/models/model_request.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/backends/cuda/device_probe.hpp"
#include "core/errors.hpp"
#include "runner/preflight/machine_facts.hpp"

namespace arch_bench {

std::int64_t planning_memory_bytes(double memory_gib, bool memory_gib_given, const std::string& backend,
                                   std::string& source) {
  if (memory_gib_given) {
    if (!std::isfinite(memory_gib) || memory_gib <= 0 || memory_gib > 1e9) {
      throw UsageError(fmt::format("--memory-gib must be a positive number of GiB (got {})", memory_gib));
    }
    source = "--memory-gib";
    return static_cast<std::int64_t>(memory_gib * 1024.0 * 1024.0 * 1024.0);
  }
  if (backend == "cuda") {
    const CudaProbe probe = probe_cuda();
    if (probe.usable && !probe.devices.empty() && probe.devices[0].contains("memory_bytes")) {
      source = "cuda device 0 memory";
      return probe.devices[0]["memory_bytes"].get<std::int64_t>();
    }
  }
  if (const auto available = mem_available_bytes()) {
    source = "MemAvailable";
    return *available;
  }
  throw UsageError("--model: cannot read MemAvailable from /proc/meminfo to plan batches with; pass --memory-gib");
}

std::shared_ptr<ModelRun> attach_model(const std::string& spec, const std::set<std::string>& given,
                                       Workload& workload) {
  ModelOverrides overrides;
  if (given.contains("query_heads")) overrides.heads = workload.heads;
  if (given.contains("head_dim")) overrides.head_dim = workload.head_dim;
  overrides.options = workload.options;
  auto run = std::make_shared<ModelRun>(make_model_run(load_model_preset(spec), overrides, 0, ""));
  const ModelPreset& preset = run->preset;
  const ModelLayer& shape = preset.layers[baseline_layer(preset).value_or(replaced_layers(preset).front())];
  workload.heads = shape.heads;
  workload.head_dim = shape.head_dim;
  workload.model = run;
  return run;
}

}  // namespace arch_bench
