#pragma once
// How the report tables write numbers: short, with the unit a reader expects, and "-" when the
// report has no value (a skipped or failed row, a dry run).
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace arch_bench::present_text {

// The number at `key` of a JSON object, nullopt when absent, null or not a number.
std::optional<double> number(const nlohmann::json& object, const char* key);
// The string at `key`, "" when absent or not a string.
std::string text(const nlohmann::json& object, const char* key);

std::string milliseconds(std::optional<double> ms);               // 4 significant digits: "0.06845"
std::string band(std::optional<double> low, std::optional<double> high);  // "0.06664-0.07582"
std::string bytes(std::optional<double> bytes);                   // "1 MiB", "128 KiB", "6 KiB", "600 B"
std::string percent(std::optional<double> fraction);             // 0.7125 -> "71.3%"
std::string scientific(std::optional<double> value);              // "1.94e-03"
std::string ratio(std::optional<double> value);                   // "0.178x"

}  // namespace arch_bench::present_text
