#include "runner/report/schema_validation.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "embedded_schemas.hpp"

namespace arch_bench {

namespace {
// Parsing a schema builds a constraint tree; do it once per schema and process.
const valijson::Schema& parsed_schema(std::string_view name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<valijson::Schema>, std::less<>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(name); it != cache.end()) return *it->second;
  static std::map<std::string, nlohmann::json, std::less<>> documents;  // adapters reference these
  nlohmann::json& document = documents[std::string(name)];
  document = nlohmann::json::parse(schema_text(name));
  auto schema = std::make_unique<valijson::Schema>();
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  valijson::adapters::NlohmannJsonAdapter adapter(document);
  parser.populateSchema(adapter, *schema);
  return *(cache[std::string(name)] = std::move(schema));
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

}  // namespace arch_bench
