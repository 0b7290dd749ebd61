#include "runner/models/model_workload.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

// One override of a layer field, recorded and applied.
void override_field(ModelRun& run, ModelLayer& layer, const std::string& field, std::int64_t& slot,
                    std::int64_t value) {
  if (slot == value) return;
  run.overrides.push_back({{"field", field}, {"layer", layer.name}, {"preset", slot}, {"value", value}});
  slot = value;
}

nlohmann::json option_json(const OptionValue& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

// --option KEY=VALUE (or its flag) on a layer type whose mechanism declares KEY.
void override_option(ModelRun& run, ModelLayer& layer, const std::string& key, const OptionValue& value) {
  const Mechanism* mechanism = find_mechanism(layer.mechanism);
  if (mechanism == nullptr) return;
  const auto& specs = mechanism->option_specs();
  if (std::none_of(specs.begin(), specs.end(), [&](const OptionSpec& spec) { return spec.key == key; })) return;
  const auto integer = [&]() -> std::optional<std::int64_t> {
    if (const auto* v = std::get_if<std::int64_t>(&value)) return *v;
    return std::nullopt;
  }();
  nlohmann::json before;
  if (key == "kv_heads" && integer) {
    before = layer.kv_heads;
    layer.kv_heads = *integer;
  } else if (key == "window" && integer) {
    before = layer.window ? nlohmann::json(*layer.window) : nlohmann::json(nullptr);
    layer.window = *integer;
  } else if (key == "state_size" && integer) {
    before = layer.d_state ? nlohmann::json(*layer.d_state) : nlohmann::json(nullptr);
    layer.d_state = *integer;
  } else {
    before = layer.options.contains(key) ? layer.options[key] : nlohmann::json(nullptr);
    layer.options[key] = option_json(value);
  }
  // Only a value the preset set is overridden; an option it leaves alone (--qk-scale, a feature map)
  // is a setting of the run, recorded in workload.options like any run's.
  if (!before.is_null() && before != option_json(value)) {
    run.overrides.push_back({{"field", key}, {"layer", layer.name}, {"preset", before}, {"value", option_json(value)}});
  }
}

bool uses_mechanism(const ModelPreset& preset, const std::string& id) {
  return std::any_of(preset.layers.begin(), preset.layers.end(),
                     [&](const ModelLayer& layer) { return layer.mechanism == id; });
}

}  // namespace

std::vector<std::size_t> replaced_layers(const ModelPreset& preset) {
  std::vector<std::size_t> indices;
  for (std::size_t i = 0; i < preset.layers.size(); ++i) {
    if (is_attention_layer(preset.layers[i])) indices.push_back(i);
  }
  if (indices.empty()) indices.push_back(0);
  return indices;
}

std::optional<std::size_t> baseline_layer(const ModelPreset& preset) {
  for (std::size_t i = 0; i < preset.layers.size(); ++i) {
    if (preset.layers[i].mechanism == "softmax_kv") return i;
  }
  for (std::size_t i = 0; i < preset.layers.size(); ++i) {
    if (is_attention_layer(preset.layers[i])) return i;
  }
  return std::nullopt;
}

ModelRun make_model_run(ModelPreset preset, const ModelOverrides& overrides, std::int64_t memory_bytes,
                        std::string memory_source) {
  ModelRun run;
  run.memory_bytes = memory_bytes;
  run.memory_source = std::move(memory_source);
  const std::vector<std::size_t> replaced = replaced_layers(preset);
  for (std::size_t i : replaced) {
    ModelLayer& layer = preset.layers[i];
    if (overrides.heads) {
      // The query heads change, the K/V heads stay unless asked: a preset with equal heads keeps them equal.
      const bool multi_head = layer.kv_heads == layer.heads;
      override_field(run, layer, "heads", layer.heads, *overrides.heads);
      if (multi_head) layer.kv_heads = layer.heads;
    }
    if (overrides.head_dim) override_field(run, layer, "head_dim", layer.head_dim, *overrides.head_dim);
  }
  for (ModelLayer& layer : preset.layers) {
    for (const auto& [key, value] : overrides.options.values()) override_option(run, layer, key, value);
  }
  for (const ModelLayer& layer : preset.layers) {
    if (layer.heads % layer.kv_heads != 0) {
      throw UsageError(fmt::format("--model {}: layer type {} has {} query heads and {} K/V heads; the K/V heads must "
                                   "divide the query heads",
                                   preset.id, layer.name, layer.heads, layer.kv_heads));
    }
    if (const auto why = cannot_run_yet(layer)) {
      throw UsageError(fmt::format("--model {} cannot run yet: layer type {}: {} (a preset is never measured with "
                                   "another mechanism or shape in its place; `arch-bench list --models` shows which "
                                   "presets this build runs)",
                                   preset.id, layer.name, *why));
    }
  }
  run.preset = std::move(preset);
  return run;
}

std::string layer_variant(const ModelLayer& layer) { return "layer=" + layer.name; }
std::string instead_of_variant(const ModelLayer& layer) { return "instead_of=" + layer.name; }
bool is_model_layer_arm(const Arm& arm) { return arm.role == Role::candidate && arm.variant.starts_with("layer="); }

std::vector<Arm> model_arms(const ModelRun& run, const std::vector<std::string>& candidates,
                            const MechanismOptions& workload_options) {
  const ModelPreset& preset = run.preset;
  const std::optional<std::size_t> base = baseline_layer(preset);
  const ModelLayer& shape = preset.layers[base.value_or(replaced_layers(preset).front())];
  std::vector<Arm> arms;
  auto layer_arm = [](const ModelLayer& layer, Role role) {
    Arm arm{layer.mechanism, role, layer_variant(layer), layer_options(layer)};
    arm.heads = layer.heads;
    arm.head_dim = layer.head_dim;
    return arm;
  };
  auto instead_arm = [&](const std::string& mechanism_id, Role role) {
    const Mechanism* mechanism = find_mechanism(mechanism_id);
    if (mechanism == nullptr) {
      std::vector<std::string> known;
      for (const auto& m : all_mechanisms()) known.push_back(m->info().id);
      throw UsageError(fmt::format("--candidates: unknown mechanism '{}' (known: {})", mechanism_id,
                                   fmt::join(known, ", ")));
    }
    Arm arm{mechanism_id, role, instead_of_variant(shape), mechanism->arm_options(workload_options)};
    arm.heads = shape.heads;
    arm.head_dim = shape.head_dim;
    // A replacement that groups K/V heads (sliding_window) keeps the attention's grouping: the
    // model's cache with a window, not a multi-head cache 4-8x larger than the model's own.
    for (const OptionSpec& spec : mechanism->option_specs()) {
      if (spec.key == "kv_heads" && shape.kv_heads > 0) {
        arm.options.set("kv_heads", spec.parse(std::to_string(shape.kv_heads)));
      }
    }
    return arm;
  };
  // The baseline: the model's own attention, or exact attention in place of a recurrent model's layers.
  if (base) arms.push_back(layer_arm(preset.layers[*base], Role::baseline));
  else arms.push_back(instead_arm("softmax_kv", Role::baseline));
  for (std::size_t i = 0; i < preset.layers.size(); ++i) {
    if (!base || i != *base) arms.push_back(layer_arm(preset.layers[i], Role::candidate));
  }
  std::vector<std::string> ids = candidates;
  if (ids.empty()) {
    for (const auto& mechanism : all_mechanisms()) {
      if (mechanism->info().state_kind == StateKind::fixed_state) ids.push_back(mechanism->info().id);
    }
  }
  for (const std::string& id : ids) {
    // A mechanism the model already uses is measured at the model's own shape; a second arm of it at
    // the attention's shape would be another model than the preset describes.
    if (uses_mechanism(preset, id) || (!base && id == "softmax_kv")) continue;
    arms.push_back(instead_arm(id, Role::candidate));
  }
  return arms;
}

}  // namespace arch_bench
