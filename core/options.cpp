#include "core/options.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace arch_bench {

namespace {
// "feature_map" -> "feature map": what a message calls a value of the option.
std::string noun(const std::string& key) {
  std::string text = key;
  for (char& c : text) c = c == '_' ? ' ' : c;
  return text;
}

std::string choices_text(const std::vector<std::string>& choices) {
  std::string text;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    text += i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ";
    text += choices[i];
  }
  return text;
}

std::string bound_text(const OptionSpec& spec) {
  if (!spec.minimum) return "";
  const bool strict = spec.exclusive_minimum && spec.type == OptionType::number;
  return fmt::format(" {} {}", strict ? ">" : ">=", option_value_text(spec.type == OptionType::integer
                                                                        ? OptionValue(static_cast<std::int64_t>(*spec.minimum))
                                                                        : OptionValue(*spec.minimum)));
}

// The value held under the spec's key when it has the spec's type (the mechanism's unsupported()
// judges its range, so that a cell with features = 0 is refused, not run with the default), else the default.
const OptionValue& value_or_default(const OptionSpec& spec, const MechanismOptions& options) {
  const OptionValue* value = options.find(spec.key);
  return value != nullptr && value->index() == spec.default_value.index() ? *value : spec.default_value;
}
}  // namespace

std::string option_type_name(OptionType type) {
  switch (type) {
    case OptionType::text: return "text";
    case OptionType::integer: return "integer";
    case OptionType::number: return "number";
  }
  return "text";
}

std::string option_value_text(const OptionValue& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return std::to_string(*integer);
  return fmt::format("{}", std::get<double>(value));
}

std::string OptionSpec::flag() const {
  std::string name = "--" + key;
  for (char& c : name) c = c == '_' ? '-' : c;
  return name;
}

std::string OptionSpec::allowed() const {
  switch (type) {
    case OptionType::text: return choices.empty() ? "any text" : choices_text(choices);
    case OptionType::integer: return "an integer" + bound_text(*this);
    case OptionType::number: return "a number" + bound_text(*this);
  }
  return "";
}

std::optional<std::string> OptionSpec::problem(const OptionValue& value) const {
  const std::string shown = option_value_text(value);
  switch (type) {
    case OptionType::text: {
      const auto* text = std::get_if<std::string>(&value);
      if (text == nullptr) return fmt::format("takes text, not {}", shown);
      if (!choices.empty() && std::find(choices.begin(), choices.end(), *text) == choices.end()) {
        return fmt::format("unknown {} '{}' (use {})", noun(key), *text, allowed());
      }
      return std::nullopt;
    }
    case OptionType::integer: {
      const auto* integer = std::get_if<std::int64_t>(&value);
      if (integer == nullptr) return fmt::format("must be {} (got '{}')", allowed(), shown);
      if (minimum && static_cast<double>(*integer) < *minimum) {
        return *minimum == 1 ? fmt::format("must be a positive integer (got {})", *integer)
                             : fmt::format("must be {} (got {})", allowed(), *integer);
      }
      return std::nullopt;
    }
    case OptionType::number: {
      const double* number = std::get_if<double>(&value);
      if (number == nullptr) return fmt::format("must be {} (got '{}')", allowed(), shown);
      const bool below = minimum && (exclusive_minimum ? !(*number > *minimum) : !(*number >= *minimum));
      if (!std::isfinite(*number) || below) {
        return minimum == 0.0 && exclusive_minimum ? fmt::format("must be a positive number (got {})", shown)
                                                   : fmt::format("must be {} (got {})", allowed(), shown);
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

void OptionSpec::check(const OptionValue& value) const {
  if (auto why = problem(value)) {
    // "--feature-map: unknown feature map ..." reads better with a colon; "--features must be ..." without.
    throw UsageError(flag() + (why->starts_with("must") ? " " : ": ") + *why);
  }
}

OptionValue OptionSpec::parse(std::string_view text) const {
  OptionValue value = std::string(text);
  if (type == OptionType::integer) {
    std::int64_t integer = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), integer);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
      throw UsageError(fmt::format("{} must be {} (got '{}')", flag(), allowed(), text));
    }
    value = integer;
  } else if (type == OptionType::number) {
    const std::string copy(text);
    char* end = nullptr;
    const double number = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size()) {
      throw UsageError(fmt::format("{} must be {} (got '{}')", flag(), allowed(), text));
    }
    value = number;
  }
  check(value);
  return value;
}

OptionValue OptionSpec::from_json(const nlohmann::json& value, const std::string& where) const {
  OptionValue read;
  if (type == OptionType::text && value.is_string()) read = value.get<std::string>();
  else if (type == OptionType::integer && value.is_number_integer()) read = value.get<std::int64_t>();
  else if (type == OptionType::number && value.is_number()) read = value.get<double>();
  else throw UsageError(fmt::format("{}: {} must be {} (got {})", where, key, allowed(), value.dump()));
  if (auto why = problem(read)) throw UsageError(fmt::format("{}: {} {}", where, key, *why));
  return read;
}

nlohmann::json OptionSpec::value_schema() const {
  nlohmann::json schema = nlohmann::json::object();
  if (type == OptionType::text) {
    if (choices.empty()) schema["type"] = "string";
    else schema["enum"] = choices;
    return schema;
  }
  schema["type"] = type == OptionType::integer ? "integer" : "number";
  if (minimum) {
    if (type == OptionType::integer) schema["minimum"] = static_cast<std::int64_t>(std::ceil(*minimum));
    else schema[exclusive_minimum ? "exclusiveMinimum" : "minimum"] = *minimum;
  }
  return schema;
}

std::string OptionSpec::text(const MechanismOptions& options) const {
  const OptionValue& value = value_or_default(*this, options);
  const auto* text = std::get_if<std::string>(&value);
  return text != nullptr ? *text : option_value_text(value);
}

std::int64_t OptionSpec::integer(const MechanismOptions& options) const {
  const OptionValue& value = value_or_default(*this, options);
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return *integer;
  return 0;
}

double OptionSpec::number(const MechanismOptions& options) const {
  const OptionValue& value = value_or_default(*this, options);
  if (const auto* number = std::get_if<double>(&value)) return *number;
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return static_cast<double>(*integer);
  return 0;
}

const OptionValue* MechanismOptions::find(std::string_view key) const {
  const auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

void MechanismOptions::set(const std::string& key, OptionValue value) { values_[key] = std::move(value); }

void MechanismOptions::erase(std::string_view key) {
  if (const auto it = values_.find(key); it != values_.end()) values_.erase(it);
}

nlohmann::json MechanismOptions::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : values_) {
    std::visit([&, &key = key](const auto& held) { out[key] = held; }, value);
  }
  return out;
}

MechanismOptions resolved_options(const std::vector<OptionSpec>& specs, const MechanismOptions& options) {
  MechanismOptions resolved;
  for (const OptionSpec& spec : specs) {
    const OptionValue* value = options.find(spec.key);
    resolved.set(spec.key, value != nullptr ? *value : spec.default_value);
  }
  return resolved;
}

}  // namespace arch_bench
