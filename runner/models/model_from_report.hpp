#pragma once
// The model run a report's `model` block describes, rebuilt without its preset file: `merge` decides
// over the shards' rows with the arms they were measured as (runner/shard/report_rows.cpp), which
// a preset edited or moved since the run would otherwise change.
#include <nlohmann/json.hpp>

#include "runner/models/model_workload.hpp"

namespace arch_bench {

// `block` is a schema-valid report's `model` (overrides already applied to its layers).
ModelRun model_run_from_report(const nlohmann::json& block);

}  // namespace arch_bench
