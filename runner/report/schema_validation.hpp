#pragma once
// Validation of JSON documents against the project's schemas (schemas/*.schema.json, compiled
// into the binary) with valijson.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace arch_bench {

// The schema text by name ("result", "profile", "preflight", "diff"); throws std::out_of_range
// for an unknown name.
std::string_view schema_text(std::string_view name);

// Strings longer than this many characters are cut to it before valijson sees them (see
// schema_errors). Every string a schema constrains by "pattern" (or enum) must have a maxLength below
// it, so that cutting changes no verdict; tests/test_json_input.cpp checks the schemas for that.
inline constexpr std::size_t kSchemaCheckedStringLength = 512;

// Every violation as "<json pointer>: <message>"; empty when `document` is valid. Safe on any
// document nested no deeper than kMaxJsonDepth (runner/report/json_input.hpp), whatever its strings.
std::vector<std::string> schema_errors(const nlohmann::json& document, std::string_view schema_name);

}  // namespace arch_bench
