#include "runner/models/model_figures.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/checked_size.hpp"
#include "runner/models/model_footprint.hpp"

namespace arch_bench {

namespace {

const Row* decode_row(std::span<const Row> rows, const std::string& mechanism, const std::string& variant,
                      std::int64_t length) {
  for (const Row& row : rows) {
    if (row.cell.mechanism == mechanism && row.variant == variant && row.cell.phase == Phase::decode &&
        row.cell.sequence_length == length) {
      return &row;
    }
  }
  return nullptr;
}

// What one layer of a type costs at `length`, from its decode row: the median step, and the state of
// one sequence (rows are measured at the workload's batch; state grows in proportion to it).
struct LayerCost {
  std::optional<double> step_ms;
  std::optional<std::int64_t> state_bytes;
};

LayerCost layer_cost(const Row* row) {
  if (row == nullptr) return {};
  LayerCost cost;
  if (row->cell.batch > 0) cost.state_bytes = row->state_bytes / row->cell.batch;
  if (row->status == RowStatus::ok && !row->samples_ms.empty()) cost.step_ms = row->stats.median;
  return cost;
}

// Sums count x cost over the layer types, each computed by `cost_of(layer index)`.
template <typename CostOf>
ModelFigures sum_layers(const ModelRun& run, CostOf cost_of) {
  ModelFigures figures;
  double step = 0;
  std::int64_t state = 0;
  bool timed = true, sized = true;
  for (std::size_t i = 0; i < run.preset.layers.size(); ++i) {
    const LayerCost cost = cost_of(i);
    const std::int64_t count = run.preset.layers[i].count;
    if (cost.step_ms) step += static_cast<double>(count) * *cost.step_ms;
    else timed = false;
    if (cost.state_bytes) state = checked_add(state, checked_mul(count, *cost.state_bytes));
    else sized = false;
  }
  if (timed) figures.decode_step_ms = step;
  if (sized) {
    figures.state_bytes_per_sequence = state;
    figures.max_batch = max_batch(run.memory_bytes, weights_bytes(run.preset), state);
  }
  return figures;
}

std::string arm_variant_of_layer(const ModelRun& run, std::size_t i) {
  const ModelLayer& layer = run.preset.layers[i];
  return layer_variant(layer);
}

nlohmann::json optional_json(const auto& value) { return value ? nlohmann::json(*value) : nlohmann::json(nullptr); }

nlohmann::json figures_json(const ModelFigures& figures) {
  return {{"decode_step_ms", optional_json(figures.decode_step_ms)},
          {"state_bytes_per_sequence", optional_json(figures.state_bytes_per_sequence)},
          {"max_batch", figures.max_batch}};
}

std::string arm_name(const Arm& arm) { return fmt::format("{} ({})", arm.mechanism, arm.variant); }

std::string mebibytes(std::optional<std::int64_t> bytes) {
  if (!bytes) return "unknown";
  return fmt::format("{:.1f} MiB", static_cast<double>(*bytes) / (1 << 20));
}

}  // namespace

ModelFigures model_figures(const ModelRun& run, std::span<const Row> rows, std::int64_t length) {
  return sum_layers(run, [&](std::size_t i) {
    return layer_cost(decode_row(rows, run.preset.layers[i].mechanism, arm_variant_of_layer(run, i), length));
  });
}

ModelFigures replaced_figures(const ModelRun& run, std::span<const Row> rows, const Arm& arm, std::int64_t length) {
  const std::vector<std::size_t> replaced = replaced_layers(run.preset);
  const LayerCost replacement = layer_cost(decode_row(rows, arm.mechanism, arm.variant, length));
  return sum_layers(run, [&](std::size_t i) {
    if (std::find(replaced.begin(), replaced.end(), i) != replaced.end()) return replacement;
    return layer_cost(decode_row(rows, run.preset.layers[i].mechanism, arm_variant_of_layer(run, i), length));
  });
}

std::optional<std::int64_t> model_crossover(const ModelRun& run, std::span<const Row> rows, const Arm& arm,
                                            const std::vector<std::int64_t>& lengths) {
  std::vector<std::int64_t> sorted = lengths;
  std::sort(sorted.begin(), sorted.end());
  std::optional<std::int64_t> crossover;
  for (std::int64_t length : sorted) {
    const ModelFigures model = model_figures(run, rows, length);
    const ModelFigures replaced = replaced_figures(run, rows, arm, length);
    const bool faster = model.decode_step_ms && replaced.decode_step_ms && *replaced.decode_step_ms <= *model.decode_step_ms;
    if (faster && !crossover) crossover = length;
    if (!faster) crossover.reset();  // it must stay no slower from there on
  }
  return crossover;
}

nlohmann::json planned_model_block(const ModelRun& run, const Plan& plan, const Workload& workload) {
  std::vector<Row> rows;
  for (const PlannedCell& planned : plan.cells) {
    Row row;
    row.cell = planned.cell;
    row.role = planned.arm.role;
    row.variant = planned.arm.variant;
    row.state_bytes = planned.state_bytes;
    row.status = RowStatus::skipped;  // planned, not measured: bytes and batches, no step times
    rows.push_back(std::move(row));
  }
  std::vector<Arm> arms;
  for (const PlannedCell& planned : plan.cells) {
    const bool seen = std::any_of(arms.begin(), arms.end(), [&](const Arm& arm) {
      return arm.mechanism == planned.arm.mechanism && arm.variant == planned.arm.variant;
    });
    if (!seen) arms.push_back(planned.arm);
  }
  return model_block(run, rows, workload, arms);
}

nlohmann::json model_block(const ModelRun& run, std::span<const Row> rows, const Workload& workload,
                           std::span<const Arm> arms) {
  const ModelPreset& preset = run.preset;
  nlohmann::json layers = nlohmann::json::array();
  const std::optional<std::size_t> base = baseline_layer(preset);
  for (std::size_t i = 0; i < preset.layers.size(); ++i) {
    const ModelLayer& layer = preset.layers[i];
    layers.push_back({{"name", layer.name},
                      {"mechanism", layer.mechanism},
                      {"count", layer.count},
                      {"heads", layer.heads},
                      {"kv_heads", layer.kv_heads},
                      {"head_dim", layer.head_dim},
                      {"window", optional_json(layer.window)},
                      {"d_state", optional_json(layer.d_state)},
                      {"options", layer.options},
                      {"variant", layer_variant(layer)},
                      {"baseline", base && *base == i}});
  }
  nlohmann::json replaced = nlohmann::json::array();
  for (std::size_t i : replaced_layers(preset)) replaced.push_back(preset.layers[i].name);
  std::vector<std::int64_t> lengths = workload.sequence_lengths;
  std::sort(lengths.begin(), lengths.end());
  nlohmann::json per_length = nlohmann::json::array();
  for (std::int64_t length : lengths) {
    nlohmann::json per_layer = nlohmann::json::array();
    for (std::size_t i = 0; i < preset.layers.size(); ++i) {
      const ModelLayer& layer = preset.layers[i];
      const LayerCost cost = layer_cost(decode_row(rows, layer.mechanism, layer_variant(layer), length));
      per_layer.push_back({{"layer", layer.name},
                           {"count", layer.count},
                           {"median_step_ms", optional_json(cost.step_ms)},
                           {"step_ms_all_layers",
                            cost.step_ms ? nlohmann::json(*cost.step_ms * static_cast<double>(layer.count))
                                         : nlohmann::json(nullptr)},
                           {"state_bytes_per_layer", optional_json(cost.state_bytes)}});
    }
    nlohmann::json model = figures_json(model_figures(run, rows, length));
    model["per_layer_type"] = per_layer;
    nlohmann::json alternatives = nlohmann::json::array();
    for (const Arm& arm : arms) {
      if (arm.variant.starts_with("layer=")) continue;  // the model's own layer types, baseline included
      nlohmann::json entry = figures_json(replaced_figures(run, rows, arm, length));
      entry["mechanism"] = arm.mechanism;
      entry["variant"] = arm.variant;
      alternatives.push_back(entry);
    }
    per_length.push_back({{"sequence_length", length}, {"model", model}, {"replaced_by", alternatives}});
  }
  return {{"id", preset.id},
          {"name", preset.name},
          {"source", preset.source},
          {"file", preset.path.string()},
          {"sha256", preset.sha256},
          {"parameter_count", preset.parameter_count},
          {"weight_dtype", preset.weight_dtype},
          {"layers", layers},
          {"overrides", run.overrides},
          {"replaced_layers", replaced},
          {"memory", {{"bytes", run.memory_bytes},
                      {"source", run.memory_source},
                      {"weights_reserve_bytes", weights_bytes(preset)},
                      {"cache_dtype", dtype_name(workload.dtype)}}},
          {"lengths", per_length}};
}

void add_model_decision(Decision& decision, const ModelRun& run, std::span<const Row> rows, const Workload& workload,
                        std::span<const Arm> arms) {
  if (workload.sequence_lengths.empty()) return;
  const std::int64_t longest = *std::max_element(workload.sequence_lengths.begin(), workload.sequence_lengths.end());
  const ModelFigures model = model_figures(run, rows, longest);
  nlohmann::json alternatives = nlohmann::json::object();
  std::string replaced;
  for (std::size_t i : replaced_layers(run.preset)) {
    replaced += fmt::format("{}{}", replaced.empty() ? "" : "+", run.preset.layers[i].name);
  }
  decision.reasons.push_back(fmt::format("model {}: at L={} its sequence-mixing layers hold {} per sequence; "
                                         "{} sequences fit in {:.1f} GiB after {:.1f} GiB of weights",
                                         run.preset.id, longest, mebibytes(model.state_bytes_per_sequence),
                                         model.max_batch, static_cast<double>(run.memory_bytes) / (1 << 30),
                                         static_cast<double>(weights_bytes(run.preset)) / (1 << 30)));
  for (const Arm& arm : arms) {
    if (arm.variant.starts_with("layer=")) continue;  // the model's own layer types, baseline included
    const std::optional<std::int64_t> crossover = model_crossover(run, rows, arm, workload.sequence_lengths);
    nlohmann::json batches = nlohmann::json::object();
    for (std::int64_t length : workload.sequence_lengths) {
      batches[std::to_string(length)] = replaced_figures(run, rows, arm, length).max_batch;
    }
    const ModelFigures at_longest = replaced_figures(run, rows, arm, longest);
    alternatives[arm_name(arm)] = {{"mechanism", arm.mechanism},
                                   {"variant", arm.variant},
                                   {"crossover_length", optional_json(crossover)},
                                   {"max_batch_by_length", batches}};
    decision.reasons.push_back(fmt::format(
        "{} with {} replaced by {}: {}; {} per sequence and a largest batch of {} at L={} (the model's own: {})",
        run.preset.id, replaced, arm.mechanism,
        crossover ? fmt::format("whole-model decode no slower from L={}", *crossover)
                  : std::string("no crossover in the lengths measured"),
        mebibytes(at_longest.state_bytes_per_sequence), at_longest.max_batch, longest, model.max_batch));
  }
  nlohmann::json own = nlohmann::json::object();
  for (std::int64_t length : workload.sequence_lengths) {
    own[std::to_string(length)] = model_figures(run, rows, length).max_batch;
  }
  decision.details["model"] = {{"id", run.preset.id},
                               {"max_batch_by_length", own},
                               {"replaced_by", alternatives}};
}

}  // namespace arch_bench
