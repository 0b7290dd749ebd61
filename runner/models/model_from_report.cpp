#include "runner/models/model_from_report.hpp"

namespace arch_bench {

ModelRun model_run_from_report(const nlohmann::json& block) {
  ModelRun run;
  ModelPreset& preset = run.preset;
  preset.id = block.at("id").get<std::string>();
  preset.name = block.value("name", preset.id);
  preset.source = block.at("source").get<std::string>();
  preset.path = block.value("file", std::string());
  preset.sha256 = block.at("sha256").get<std::string>();
  preset.parameter_count = block.at("parameter_count").get<std::int64_t>();
  preset.weight_dtype = block.at("weight_dtype").get<std::string>();
  for (const nlohmann::json& entry : block.at("layers")) {
    ModelLayer layer;
    layer.name = entry.at("name").get<std::string>();
    layer.mechanism = entry.at("mechanism").get<std::string>();
    layer.count = entry.at("count").get<std::int64_t>();
    layer.heads = entry.at("heads").get<std::int64_t>();
    layer.kv_heads = entry.at("kv_heads").get<std::int64_t>();
    layer.head_dim = entry.at("head_dim").get<std::int64_t>();
    if (entry.contains("window") && entry["window"].is_number_integer()) layer.window = entry["window"].get<std::int64_t>();
    if (entry.contains("d_state") && entry["d_state"].is_number_integer()) layer.d_state = entry["d_state"].get<std::int64_t>();
    layer.options = entry.value("options", nlohmann::json::object());
    preset.layers.push_back(std::move(layer));
  }
  run.overrides = block.at("overrides");
  run.memory_bytes = block.at("memory").at("bytes").get<std::int64_t>();
  run.memory_source = block.at("memory").at("source").get<std::string>();
  return run;
}

}  // namespace arch_bench
