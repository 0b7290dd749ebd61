#include "runner/report/schema_validation.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "embedded_schemas.hpp"
#include "mechanisms/option_catalog.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {
// The values each option key takes, from the registered mechanisms' declarations: any declaration's
// value for definitions/options (a workload's, given for every mechanism), the mechanism's own for a
// row's and an arm's options, and a list of them for each axis option of the workload (features).
void add_option_schemas(nlohmann::json& schema) {
  nlohmann::json& definitions = schema["definitions"];
  nlohmann::json& any_value = definitions["options"]["properties"];
  for (const DeclaredOption& option : declared_options()) {
    nlohmann::json schemas = nlohmann::json::array();
    for (const auto& [mechanism, spec] : option.declarations) {
      const nlohmann::json value = spec.value_schema();
      if (std::find(schemas.begin(), schemas.end(), value) == schemas.end()) schemas.push_back(value);
    }
    const nlohmann::json value = schemas.size() == 1 ? schemas[0] : nlohmann::json{{"anyOf", schemas}};
    any_value[option.key] = value;
    if (option.axis()) {
      schema["properties"]["workload"]["properties"][option.key] = {{"type", "array"}, {"items", value}};
    }
  }
  const std::vector<OptionSpec> harness = harness_option_specs();
  for (const auto& mechanism : all_mechanisms()) {
    nlohmann::json own = nlohmann::json::object();
    for (const OptionSpec& spec : mechanism->option_specs()) own[spec.key] = spec.value_schema();
    if (own.empty()) continue;
    const nlohmann::json rule = {
        {"if", {{"properties", {{"mechanism", {{"const", mechanism->info().id}}}}}, {"required", {"mechanism"}}}},
        {"then", {{"properties", {{"options", {{"properties", own}}}}}}}};
    for (const char* holder : {"row", "arm"}) definitions[holder]["allOf"].push_back(rule);
  }
}

// Parsing a schema builds a constraint tree; do it once per schema and process.
const valijson::Schema& parsed_schema(std::string_view name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<valijson::Schema>, std::less<>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(name); it != cache.end()) return *it->second;
  static std::map<std::string, nlohmann::json, std::less<>> documents;  // adapters reference these
  nlohmann::json& document = documents[std::string(name)];
  document = nlohmann::json::parse(schema_text(name));
  if (name == "result") add_option_schemas(document);
  auto schema = std::make_unique<valijson::Schema>();
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  valijson::adapters::NlohmannJsonAdapter adapter(document);
  parser.populateSchema(adapter, *schema);
  return *(cache[std::string(name)] = std::move(schema));
}
// The byte length of the first `count` characters (UTF-8 code points) of `text`, or npos when it has
// no more than `count`.
std::size_t cut_point(const std::string& text, std::size_t count) {
  if (text.size() <= count) return std::string::npos;
  std::size_t seen = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // a continuation byte
    if (seen == count) return i;
    ++seen;
  }
  return std::string::npos;
}

// Visits every string value of `document` without recursion (the document may be deep); stops at
// the first for which `visit` returns false.
template <typename Json, typename Visit>
void for_each_string(Json& document, Visit visit) {
  std::vector<Json*> pending{&document};
  while (!pending.empty()) {
    Json* value = pending.back();
    pending.pop_back();
    if (value->is_string()) {
      if (!visit(value->template get_ref<std::conditional_t<std::is_const_v<Json>, const std::string&,
                                                            std::string&>>())) {
        return;
      }
    } else if (value->is_structured()) {
      for (auto& child : *value) pending.push_back(&child);
    }
  }
}

// libstdc++'s std::regex recurses once per character of the string it matches: a 50,000-character
// run_label overflows an 8 MiB stack (6,000 do under AddressSanitizer). valijson 1.0 applies every
// constraint of a schema even after one failed, so a maxLength next to the pattern does not stop the
// pattern from running. valijson therefore sees a copy whose strings are cut to
// kSchemaCheckedStringLength characters; every patterned string has a maxLength below that, so a
// cut string fails its maxLength exactly as the whole one does, and the verdict is unchanged.
bool has_long_string(const nlohmann::json& document) {
  bool found = false;
  for_each_string(document, [&](const std::string& text) {
    found = cut_point(text, kSchemaCheckedStringLength) != std::string::npos;
    return !found;
  });
  return found;
}

void cut_long_strings(nlohmann::json& document) {
  for_each_string(document, [](std::string& text) {
    if (const std::size_t at = cut_point(text, kSchemaCheckedStringLength); at != std::string::npos) text.resize(at);
    return true;
  });
}

// valijson reads every JSON integer as an int64: an unsigned one above INT64_MAX (a state_bytes of
// 2^63, say) wraps to a negative number and fails "minimum": 0 with "Expected number greater than or
// equal to 0", which names the wrong problem. No count a report holds can reach 2^63 (arch-bench keeps
// them in int64), so such a value is refused here with its real reason, and valijson sees INT64_MAX in
// its place so that it judges the rest of the document. Returns one error per value, in valijson's
// "<root>[key][index]" form; `document` is changed only when there are any.
std::vector<std::string> take_out_oversized_integers(nlohmann::json& document) {
  constexpr auto kLargest = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::vector<std::string> errors;
  std::vector<std::pair<nlohmann::json*, std::string>> pending{{&document, "<root>"}};
  while (!pending.empty()) {
    auto [value, where] = pending.back();
    pending.pop_back();
    if (value->is_number_unsigned() && value->get<std::uint64_t>() > kLargest) {
      errors.push_back(fmt::format("{}: {} is larger than the largest integer a report may hold (2^63 - 1 = {})",
                                   where, value->get<std::uint64_t>(), kLargest));
      *value = std::numeric_limits<std::int64_t>::max();
    } else if (value->is_object()) {
      for (auto& [key, child] : value->items()) pending.emplace_back(&child, where + "[" + key + "]");
    } else if (value->is_array()) {
      for (std::size_t i = 0; i < value->size(); ++i) pending.emplace_back(&(*value)[i], fmt::format("{}[{}]", where, i));
    }
  }
  std::reverse(errors.begin(), errors.end());  // document order (the walk is last-in, first-out)
  return errors;
}

bool has_oversized_integer(const nlohmann::json& document) {
  constexpr auto kLargest = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::vector<const nlohmann::json*> pending{&document};
  while (!pending.empty()) {
    const nlohmann::json* value = pending.back();
    pending.pop_back();
    if (value->is_number_unsigned() && value->get<std::uint64_t>() > kLargest) return true;
    if (value->is_structured()) {
      for (const auto& child : *value) pending.push_back(&child);
    }
  }
  return false;
}

std::vector<std::string> validate(const nlohmann::json& document, const valijson::Schema& schema) {
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(document);
  std::vector<std::string> errors;
  if (validator.validate(schema, adapter, &results)) return errors;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string where;
    for (const std::string& part : error.context) where += part;
    errors.push_back(where + ": " + error.description);
  }
  if (errors.empty()) errors.push_back("document does not match the schema");
  return errors;
}
}  // namespace

std::string_view schema_text(std::string_view name) {
  for (const auto& [key, text] : embedded::schemas) {
    if (key == name) return text;
  }
  throw std::out_of_range("no schema named '" + std::string(name) + "' in schemas/");
}

std::vector<std::string> schema_errors(const nlohmann::json& document, std::string_view schema_name) {
  const valijson::Schema& schema = parsed_schema(schema_name);
  const bool long_string = has_long_string(document), oversized = has_oversized_integer(document);
  if (!long_string && !oversized) return validate(document, schema);
  nlohmann::json copy = document;
  if (long_string) cut_long_strings(copy);
  std::vector<std::string> errors = oversized ? take_out_oversized_integers(copy) : std::vector<std::string>{};
  for (std::string& error : validate(copy, schema)) errors.push_back(std::move(error));
  return errors;
}

}  // namespace arch_bench
