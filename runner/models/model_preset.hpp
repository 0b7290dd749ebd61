#pragma once
// Model presets (models/<id>.json, schemas/model.schema.json): a published model's sequence-mixing
// layers, per layer type, as arch-bench's mechanisms compute them. Loading resolves an id or a file,
// validates it and hashes it; whether this build can run each layer type is asked separately
// (cannot_run_yet), so a preset that needs a missing mechanism or option says so instead of being
// measured with something else.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/options.hpp"

namespace arch_bench {

struct ModelLayer {
  std::string name;       // the layer type: "attention", "local", "mamba", ...
  std::string mechanism;  // the mechanism id that computes it
  std::int64_t count = 0;
  std::int64_t heads = 0;     // query heads (recurrent layers: heads of the state)
  std::int64_t head_dim = 0;
  std::int64_t kv_heads = 0;  // K/V heads; equal to heads when the file gives none
  std::optional<std::int64_t> window;   // sliding-window attention
  std::optional<std::int64_t> d_state;  // mamba's state size N
  nlohmann::json options = nlohmann::json::object();  // further mechanism options, by key
};

struct ModelPreset {
  std::string id, name, source;
  std::int64_t parameter_count = 0;
  std::string weight_dtype;  // "bfloat16", ...
  std::vector<ModelLayer> layers;
  std::vector<std::string> notes;
  std::filesystem::path path;
  std::string sha256;  // of the file's bytes: the report records it beside the id
  nlohmann::json document;
};

// Ids of the presets found in ./models and <source dir>/models, sorted.
std::vector<std::string> known_model_ids();
// `spec` is a preset id or a path to a preset .json file. UsageError (exit 2): unknown id (listing
// the known ones), unreadable or non-JSON file, schema violations, an id that differs from the
// file name, kv_heads that do not divide heads, a window on a layer that is not sliding_window.
ModelPreset load_model_preset(const std::string& spec);
ModelPreset parse_model_preset(const nlohmann::json& document, const std::filesystem::path& path,
                               const std::string& sha256);
// One schema-valid `layers` entry, of a preset file or of a report's `model` block (whose window and
// d_state may be null: absent); kv_heads defaults to heads. Checks none of the preset's rules.
ModelLayer model_layer_from_json(const nlohmann::json& entry);

// Bytes per weight of a preset's weight_dtype.
std::int64_t weight_dtype_bytes(const std::string& weight_dtype);
// Attention layers hold a K/V cache: the layer types that "attention replaced by X" replaces.
bool is_attention_layer(const ModelLayer& layer);
// The mechanism options the layer needs, as text by key: kv_heads (when fewer than heads), window,
// state_size (d_state), then the file's own options.
std::vector<std::pair<std::string, std::string>> layer_option_texts(const ModelLayer& layer);
// Why this build cannot run the layer yet ("mechanism sliding_window not registered", "option
// kv_heads not declared by softmax_kv", a value the declaration refuses), or nullopt.
std::optional<std::string> cannot_run_yet(const ModelLayer& layer);
// The layer's options parsed by the mechanism's declarations; call only when cannot_run_yet is empty.
MechanismOptions layer_options(const ModelLayer& layer);

}  // namespace arch_bench
