#pragma once
// Whole-model figures from a model run's rows (docs/design.md, "Model shapes"): per context length,
// the sequence-mixing part of the model's decode step (each layer type's measured step x its layer
// count), its cache/state bytes per sequence over all layers, and the largest batch that fits in the
// planning memory after the weights; the same for the model with its attention replaced by each
// candidate. The report's `model` block and the landscape decision's model lines read these.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/models/model_workload.hpp"
#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/run_result.hpp"
#include "runner/pipeline/workload.hpp"

namespace arch_bench {

// One model (the preset, or the preset with its replaced layers computed by another mechanism) at
// one context length.
struct ModelFigures {
  std::optional<double> decode_step_ms;  // nullopt: a layer type's decode row is missing or not ok
  std::optional<std::int64_t> state_bytes_per_sequence;
  std::int64_t max_batch = 0;
};

// The model as the preset describes it, at `length`.
ModelFigures model_figures(const ModelRun& run, std::span<const Row> rows, std::int64_t length);
// The preset with every replaced layer computed by `arm` (mechanism and variant of its rows).
ModelFigures replaced_figures(const ModelRun& run, std::span<const Row> rows, const Arm& arm, std::int64_t length);
// The smallest measured length from which the replaced model's decode step is no slower than the
// model's at every longer length measured; nullopt when there is none.
std::optional<std::int64_t> model_crossover(const ModelRun& run, std::span<const Row> rows, const Arm& arm,
                                            const std::vector<std::int64_t>& lengths);

// The report's top-level `model` block (schemas/result.schema.json).
nlohmann::json model_block(const ModelRun& run, std::span<const Row> rows, const Workload& workload,
                           std::span<const Arm> arms);
// The same block for a dry run, from the plan's cells: state bytes and batches, every step time null.
nlohmann::json planned_model_block(const ModelRun& run, const Plan& plan, const Workload& workload);
// decision.details.model and one reason per alternative: its crossover length and memory-limited
// batch against the model's own.
void add_model_decision(Decision& decision, const ModelRun& run, std::span<const Row> rows, const Workload& workload,
                        std::span<const Arm> arms);

}  // namespace arch_bench
