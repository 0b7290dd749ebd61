#pragma once
// Validation of JSON documents against the project's schemas (schemas/*.schema.json, compiled
// into the binary) with valijson.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace arch_bench {

// The schema text by name ("result", "profile", "preflight", "diff"); throws std::out_of_range
// for an unknown name.
std::string_view schema_text(std::string_view name);

// Every violation as "<json pointer>: <message>"; empty when `document` is valid.
std::vector<std::string> schema_errors(const nlohmann::json& document, std::string_view schema_name);

}  // namespace arch_bench
