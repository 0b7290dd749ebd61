#pragma once
// `run --model`: the preset loaded, checked against the mode, overridden by the command line and
// attached to the workload, before the plan is built (runner/cli/run_command.cpp calls it).
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "runner/models/model_workload.hpp"
#include "runner/pipeline/workload.hpp"

namespace arch_bench {

// The memory capacity figures plan with: --memory-gib when positive, else the CUDA device's memory
// (backend "cuda") or MemAvailable; `source` says which. UsageError for a negative or non-finite value.
std::int64_t planning_memory_bytes(double memory_gib, bool memory_gib_given, const std::string& backend,
                                   std::string& source);

// Loads `spec` (UsageError, exit 2: unknown preset, invalid file, a layer type this build cannot run,
// a mode other than landscape), applies the overrides the command line `given` (option names as
// RunOptions::given holds them) to it, records them, and sets workload.model, heads and head_dim
// (the baseline's shape, which the report's workload block and console header show). The planning
// memory is set on the returned run once the backend is known.
std::shared_ptr<ModelRun> attach_model(const std::string& spec, const std::set<std::string>& given,
                                       Workload& workload);

}  // namespace arch_bench
