#include "runner/models/model_preset.hpp"

#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "mechanisms/registry.hpp"
#include "runner/plugins/sha256.hpp"
#include "runner/report/named_json_file.hpp"

namespace arch_bench {

namespace fs = std::filesystem;

namespace {

const NamedJsonFolder& model_folder() {
  static const NamedJsonFolder kind{"models", "--model", "model preset"};
  return kind;
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string option_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();
}

const OptionSpec* declared(const Mechanism& mechanism, const std::string& key) {
  for (const OptionSpec& spec : mechanism.option_specs()) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> known_model_ids() { return known_named_json_ids(model_folder()); }

ModelPreset load_model_preset(const std::string& spec) {
  const fs::path path = resolve_named_json_file(spec, model_folder());
  return parse_model_preset(read_named_json_file(path, model_folder()), path, sha256_hex(file_bytes(path)));
}

ModelLayer model_layer_from_json(const nlohmann::json& entry) {
  ModelLayer layer;
  layer.name = entry.at("name").get<std::string>();
  layer.mechanism = entry.at("mechanism").get<std::string>();
  layer.count = entry.at("count").get<std::int64_t>();
  layer.heads = entry.at("heads").get<std::int64_t>();
  layer.head_dim = entry.at("head_dim").get<std::int64_t>();
  layer.kv_heads = entry.value("kv_heads", layer.heads);
  if (const auto window = entry.find("window"); window != entry.end() && window->is_number_integer()) {
    layer.window = window->get<std::int64_t>();
  }
  if (const auto d_state = entry.find("d_state"); d_state != entry.end() && d_state->is_number_integer()) {
    layer.d_state = d_state->get<std::int64_t>();
  }
  layer.options = entry.value("options", nlohmann::json::object());
  return layer;
}

ModelPreset parse_model_preset(const nlohmann::json& document, const fs::path& path, const std::string& sha256) {
  ModelPreset preset;
  preset.id = checked_named_json_id(document, path, "model", model_folder().noun);
  preset.name = document.at("name").get<std::string>();
  preset.source = document.at("source").get<std::string>();
  preset.parameter_count = document.at("parameter_count").get<std::int64_t>();
  preset.weight_dtype = document.at("weight_dtype").get<std::string>();
  preset.notes = document.value("notes", std::vector<std::string>{});
  for (const nlohmann::json& entry : document.at("layers")) {
    ModelLayer layer = model_layer_from_json(entry);
    const std::string where = fmt::format("model preset file {}, layer type '{}'", path.string(), layer.name);
    if (layer.heads % layer.kv_heads != 0) {
      throw UsageError(fmt::format("{}: kv_heads {} does not divide heads {} (each K/V head serves a whole group of "
                                   "query heads)",
                                   where, layer.kv_heads, layer.heads));
    }
    if (layer.kv_heads != layer.heads && !is_attention_layer(layer)) {
      throw UsageError(fmt::format("{}: kv_heads is for attention layers (softmax_kv, sliding_window), not {}", where,
                                   layer.mechanism));
    }
    if (layer.window && layer.mechanism != "sliding_window") {
      throw UsageError(fmt::format("{}: a window needs mechanism sliding_window, not {}", where, layer.mechanism));
    }
    if (layer.mechanism == "sliding_window" && !layer.window) {
      throw UsageError(fmt::format("{}: a sliding_window layer needs its window", where));
    }
    for (const ModelLayer& other : preset.layers) {
      if (other.name == layer.name) throw UsageError(fmt::format("{}: the layer type is named twice", where));
    }
    preset.layers.push_back(std::move(layer));
  }
  preset.path = path;
  preset.sha256 = sha256;
  preset.document = document;
  return preset;
}

std::int64_t weight_dtype_bytes(const std::string& weight_dtype) {
  if (weight_dtype == "float32") return 4;
  if (weight_dtype == "float8") return 1;
  return 2;  // bfloat16, float16 (the schema allows no other)
}

bool is_attention_layer(const ModelLayer& layer) {
  return layer.mechanism == "softmax_kv" || layer.mechanism == "sliding_window";
}

std::vector<std::pair<std::string, std::string>> layer_option_texts(const ModelLayer& layer) {
  std::vector<std::pair<std::string, std::string>> texts;
  // Equal heads need no option: that is softmax_kv as it has always run, so such a preset runs on a
  // build without grouped-query attention too.
  if (layer.kv_heads != layer.heads) texts.emplace_back("kv_heads", std::to_string(layer.kv_heads));
  if (layer.window) texts.emplace_back("window", std::to_string(*layer.window));
  if (layer.d_state) texts.emplace_back("state_size", std::to_string(*layer.d_state));
  for (const auto& [key, value] : layer.options.items()) texts.emplace_back(key, option_text(value));
  return texts;
}

std::optional<std::string> cannot_run_yet(const ModelLayer& layer) {
  const Mechanism* mechanism = find_mechanism(layer.mechanism);
  if (mechanism == nullptr) return fmt::format("mechanism {} not registered", layer.mechanism);
  for (const auto& [key, text] : layer_option_texts(layer)) {
    const OptionSpec* spec = declared(*mechanism, key);
    if (spec == nullptr) return fmt::format("option {} not declared by {}", key, layer.mechanism);
    try {
      spec->parse(text);
    } catch (const UsageError& error) {
      return fmt::format("{} refuses {}={}: {}", layer.mechanism, key, text, error.what());
    }
  }
  return std::nullopt;
}

MechanismOptions layer_options(const ModelLayer& layer) {
  MechanismOptions options;
  const Mechanism* mechanism = find_mechanism(layer.mechanism);
  if (mechanism == nullptr) return options;
  for (const auto& [key, text] : layer_option_texts(layer)) {
    if (const OptionSpec* spec = declared(*mechanism, key)) options.set(key, spec->parse(text));
  }
  return options;
}

}  // namespace arch_bench
