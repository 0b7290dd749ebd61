#include "mechanisms/option_catalog.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

std::vector<OptionSpec> harness_option_specs() { return {qk_scale_option()}; }

std::vector<OptionSpec> option_specs_of(std::string_view mechanism) {
  std::vector<OptionSpec> specs;
  if (const Mechanism* found = find_mechanism(mechanism)) specs = found->option_specs();
  for (OptionSpec& spec : harness_option_specs()) specs.push_back(std::move(spec));
  return specs;
}

bool DeclaredOption::axis() const {
  return std::any_of(declarations.begin(), declarations.end(), [](const auto& d) { return d.second.axis; });
}

std::string DeclaredOption::help() const {
  std::vector<std::string> helps;
  for (const auto& [mechanism, spec] : declarations) {
    if (std::find(helps.begin(), helps.end(), spec.help) == helps.end()) helps.push_back(spec.help);
  }
  return fmt::format("{}", fmt::join(helps, "; "));
}

OptionValue DeclaredOption::parse(std::string_view text) const {
  std::vector<std::string> errors;
  for (const auto& [mechanism, spec] : declarations) {
    try {
      return spec.parse(text);
    } catch (const UsageError& error) {
      errors.emplace_back(error.what());
    }
  }
  // Mechanisms that declare the key alike (mamba's and mamba2's --state-size) refuse alike: say it once.
  if (std::all_of(errors.begin(), errors.end(), [&](const std::string& e) { return e == errors.front(); })) {
    throw UsageError(errors.front());
  }
  std::vector<std::string> takes;
  for (const auto& [mechanism, spec] : declarations) takes.push_back(mechanism + " takes " + spec.allowed());
  throw UsageError(fmt::format("{}: unknown {} '{}' ({})", spec().flag(), [&] {
    std::string noun = key;
    std::replace(noun.begin(), noun.end(), '_', ' ');
    return noun;
  }(), text, fmt::join(takes, "; ")));
}

std::vector<DeclaredOption> declared_options() {
  std::vector<DeclaredOption> declared;
  auto add = [&](const std::string& owner, const OptionSpec& spec) {
    auto it = std::find_if(declared.begin(), declared.end(), [&](const DeclaredOption& d) { return d.key == spec.key; });
    if (it == declared.end()) it = declared.insert(declared.end(), DeclaredOption{spec.key, {}});
    it->declarations.emplace_back(owner, spec);
  };
  for (const OptionSpec& spec : harness_option_specs()) add("every mechanism", spec);
  for (const auto& mechanism : all_mechanisms()) {
    for (const OptionSpec& spec : mechanism->option_specs()) add(mechanism->info().id, spec);
  }
  return declared;
}

DeclaredOption declared_option(std::string_view key, const std::string& where) {
  std::vector<std::string> keys;
  for (DeclaredOption& option : declared_options()) {
    if (option.key == key) return option;
    keys.push_back(option.key);
  }
  throw UsageError(fmt::format("{}: no mechanism declares an option '{}' (declared: {})", where, key,
                               fmt::join(keys, ", ")));
}

MechanismOptions declared_options_of(std::string_view mechanism, const MechanismOptions& options) {
  MechanismOptions kept;
  for (const OptionSpec& spec : option_specs_of(mechanism)) {
    if (const OptionValue* value = options.find(spec.key)) kept.set(spec.key, *value);
  }
  return kept;
}

MechanismOptions resolved_options_of(std::string_view mechanism, const MechanismOptions& options) {
  return resolved_options(option_specs_of(mechanism), options);
}

MechanismOptions options_from_json(const nlohmann::json& options, const std::string& where) {
  MechanismOptions read;
  if (!options.is_object()) return read;
  const std::vector<DeclaredOption> declared = declared_options();
  for (const auto& item : options.items()) {
    // Named copies: a lambda may not capture a structured binding (C++20; clang refuses it).
    const std::string& key = item.key();
    const nlohmann::json& value = item.value();
    const auto it = std::find_if(declared.begin(), declared.end(), [&](const DeclaredOption& d) { return d.key == key; });
    if (it == declared.end()) {
      if (value.is_string()) read.set(key, value.get<std::string>());
      else if (value.is_number_integer()) read.set(key, value.get<std::int64_t>());
      else if (value.is_number()) read.set(key, value.get<double>());
      else throw UsageError(fmt::format("{}.{}: an option value is text or a number (got {})", where, key, value.dump()));
      continue;
    }
    std::string first_error;
    bool taken = false;
    for (const auto& [mechanism, spec] : it->declarations) {
      try {
        read.set(key, spec.from_json(value, where));
        taken = true;
        break;
      } catch (const UsageError& error) {
        if (first_error.empty()) first_error = error.what();
      }
    }
    if (!taken) throw UsageError(first_error);
  }
  return read;
}

}  // namespace arch_bench
