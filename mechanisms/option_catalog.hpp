#pragma once
// Every option the registered mechanisms declare (Mechanism::option_specs()) and the harness's own
// (qk_scale, mechanisms/common/inputs.hpp), by key: what the CLI makes its flags from, what a row
// of the report records, what the report schema checks.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/options.hpp"

namespace arch_bench {

// The options every mechanism runs with, whoever declares them: the input draws' qk_scale.
std::vector<OptionSpec> harness_option_specs();
// The options a row of `mechanism` records: its own declarations, then the harness's. An id that is
// not registered (a plugin not loaded) has the harness's only.
std::vector<OptionSpec> option_specs_of(std::string_view mechanism);

// One key as the registered mechanisms declare it. Two may declare one key with different values
// (feature_map: linear_attention's elu|relu, performer's favor+|trig): a value is good when one of
// them takes it, and each mechanism runs only a value it takes (Mechanism::arm_options).
struct DeclaredOption {
  std::string key;
  std::vector<std::pair<std::string, OptionSpec>> declarations;  // (mechanism id or "harness", spec)

  const OptionSpec& spec() const { return declarations.front().second; }  // the flag, the type
  bool axis() const;  // a declaration marks it a `run` list (OptionSpec::axis)
  // --help: each declaration's help, once each.
  std::string help() const;
  // A command-line value that some declaration takes; UsageError naming the flag and, where the
  // declarations differ, what each mechanism takes.
  OptionValue parse(std::string_view text) const;
};

// Every declared key: the harness's first, then in registry order (plugins included once loaded).
std::vector<DeclaredOption> declared_options();
// The declaration of `key`, or UsageError listing the keys there are ("--option", "where" names it).
DeclaredOption declared_option(std::string_view key, const std::string& where);

// The values of `options` whose keys `mechanism` or the harness declares (no defaults added): what
// one mechanism of several is handed (conformance --generate for every mechanism).
MechanismOptions declared_options_of(std::string_view mechanism, const MechanismOptions& options);

// `options` as `mechanism` records and runs them: its keys and the harness's, defaults filled in.
MechanismOptions resolved_options_of(std::string_view mechanism, const MechanismOptions& options);

// Options read back from a report's JSON object (a row's, an arm's, the workload's), each value typed
// and checked by its spec; a key no registered mechanism declares is kept as JSON gives it (a report
// written with a plugin that is not loaded), as text, integer or number.
MechanismOptions options_from_json(const nlohmann::json& options, const std::string& where);

}  // namespace arch_bench
