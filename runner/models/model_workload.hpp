#pragma once
// A model preset turned into a landscape run (`arch-bench run --model ID|PATH`): the model's own
// layer types measured at their own shapes (its attention, GQA and window included, is the
// baseline), and every other fixed-state mechanism measured at the attention's shape as the layer
// that would replace it. Options typed on the command line override the preset's fields; each
// override is recorded.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/models/model_preset.hpp"
#include "runner/modes/mode.hpp"

namespace arch_bench {

struct ModelRun {
  ModelPreset preset;  // its layers with the command line's overrides applied (the file's hash as read)
  // [{"field", "layer", "preset", "value"}]: every preset field the command line changed.
  nlohmann::json overrides = nlohmann::json::array();
  // Memory the capacity figures plan with, and where that number came from ("--memory-gib",
  // "MemAvailable", "cuda device 0 memory").
  std::int64_t memory_bytes = 0;
  std::string memory_source;
};

// What the command line gave that can override a preset: --query-heads and --head-dim (the
// replaced layer types', below), and mechanism options by key (every layer type whose mechanism
// declares the key).
struct ModelOverrides {
  std::optional<std::int64_t> heads, head_dim;
  MechanismOptions options;
};

// The layer types that "replaced by X" replaces: the attention layer types, or, in a model without
// attention, its first layer type (every layer of a pure recurrent model).
std::vector<std::size_t> replaced_layers(const ModelPreset& preset);
// The layer type the landscape's baseline measures: the first global (softmax_kv) attention layer
// type, else the first attention layer type; nullopt in a model without attention, whose baseline is
// softmax_kv at its first layer type's shape ("instead_of=<layer>").
std::optional<std::size_t> baseline_layer(const ModelPreset& preset);

// The run: overrides applied and recorded, every layer type checked. UsageError (exit 2) when a
// layer type cannot run on this build ("--model mistral-7b-v0.1 cannot run yet: layer type attention:
// mechanism sliding_window not registered") or an override leaves kv_heads not dividing heads.
ModelRun make_model_run(ModelPreset preset, const ModelOverrides& overrides, std::int64_t memory_bytes,
                        std::string memory_source);

// Variants that name a model run's arms: "layer=<name>" for the model's own layer types,
// "instead_of=<name>" for a mechanism measured at that layer type's shape in its place.
std::string layer_variant(const ModelLayer& layer);
std::string instead_of_variant(const ModelLayer& layer);
// An arm that measures one of the model's own layer types (not the baseline's): part of the model,
// not a candidate to judge.
bool is_model_layer_arm(const Arm& arm);

// The landscape's arms for a model run, the baseline first (see the file comment). `candidates`:
// --candidates (empty: every registered fixed-state mechanism the model does not already use).
std::vector<Arm> model_arms(const ModelRun& run, const std::vector<std::string>& candidates,
                            const MechanismOptions& workload_options);

}  // namespace arch_bench
