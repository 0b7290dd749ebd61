#include "runner/plugins/plugin_report.hpp"

#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

nlohmann::json origin_json(const PluginOrigin& origin) {
  return {{"path", origin.path},
          {"sha256", origin.sha256},
          {"name", origin.name},
          {"version", origin.version},
          {"contract_version", origin.contract_version}};
}

// Each object of `entries` (an object or an array of them) with a plugin mechanism gets its record.
void annotate(nlohmann::json& entries) {
  auto one = [](nlohmann::json& entry) {
    if (!entry.is_object() || !entry.contains("mechanism") || !entry["mechanism"].is_string()) return;
    nlohmann::json plugin = plugin_json(entry["mechanism"].get<std::string>());
    if (!plugin.is_null()) entry["plugin"] = std::move(plugin);
  };
  if (entries.is_array()) {
    for (nlohmann::json& entry : entries) one(entry);
  } else {
    one(entries);
  }
}

}  // namespace

nlohmann::json plugin_json(const std::string& id) {
  const PluginOrigin* origin = plugin_origin(id);
  return origin == nullptr ? nlohmann::json(nullptr) : origin_json(*origin);
}

void annotate_plugin_mechanisms(nlohmann::json& document) {
  const std::vector<const PluginOrigin*> plugins = loaded_plugins();
  if (plugins.empty()) return;
  nlohmann::json list = nlohmann::json::array();
  for (const PluginOrigin* origin : plugins) {
    nlohmann::json entry = origin_json(*origin);
    entry["mechanisms"] = nlohmann::json::array();
    for (const auto& mechanism : all_mechanisms()) {
      if (plugin_origin(mechanism->info().id) == origin) entry["mechanisms"].push_back(mechanism->info().id);
    }
    list.push_back(std::move(entry));
  }
  document["plugins"] = std::move(list);
  for (const char* key : {"baseline", "candidates", "plan"}) {
    if (document.contains(key)) annotate(document[key]);
  }
  if (document.contains("metrics") && document["metrics"].contains("rows")) annotate(document["metrics"]["rows"]);
}

}  // namespace arch_bench
