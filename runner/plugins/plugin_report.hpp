#pragma once
// What a report records about plugins: a top-level `plugins` list and, on every arm, plan cell and
// row of a plugin mechanism, a `plugin` object (path, sha256, name, version), so that a result names
// exactly which library build it measured. Reports of runs without plugins are unchanged.
#include <string>

#include <nlohmann/json.hpp>

namespace arch_bench {

// {path, sha256, name, version, contract_version} of the plugin behind mechanism `id`, or null.
nlohmann::json plugin_json(const std::string& id);

// Adds the plugin records to a result document (baseline, candidates, plan, metrics.rows).
void annotate_plugin_mechanisms(nlohmann::json& document);

}  // namespace arch_bench
