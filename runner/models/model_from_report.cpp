#include "runner/models/model_from_report.hpp"

#include "runner/models/model_preset.hpp"

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
    preset.layers.push_back(model_layer_from_json(entry));
  }
  run.overrides = block.at("overrides");
  run.memory_bytes = block.at("memory").at("bytes").get<std::int64_t>();
  run.memory_source = block.at("memory").at("source").get<std::string>();
  return run;
}

}  // namespace arch_bench
