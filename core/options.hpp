#pragma once
// Mechanism options: knobs that only some mechanisms read (a feature map, a feature count, a state
// size). A mechanism declares its own (Mechanism::option_specs(), in its folder); the CLI, the cell,
// the report, shards, conformance and the report schema read those declarations, so adding an
// option touches the mechanism's folder only. Every value is a workload axis recorded in the report,
// so two runs with different options are never paired by `arch-bench diff`.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace arch_bench {

enum class OptionType { text, integer, number };
std::string option_type_name(OptionType type);  // "text" | "integer" | "number"

using OptionValue = std::variant<std::string, std::int64_t, double>;
// The value as the command line and messages write it ("elu", "256", "0.5").
std::string option_value_text(const OptionValue& value);

class MechanismOptions;

// One option, declared once by the mechanism that reads it.
struct OptionSpec {
  std::string key;  // JSON key and the name in messages: "feature_map" (the CLI flag: --feature-map)
  OptionType type = OptionType::text;
  OptionValue default_value;
  std::string help;                  // one line for --help, `list` and `conformance --describe`
  std::vector<std::string> choices;  // text: the values allowed (empty: any)
  std::optional<double> minimum;     // integer, number: the least value allowed
  bool exclusive_minimum = false;    // number: the value must be above `minimum`
  // `run` takes a comma-separated list for this key, a workload axis that a mode sweeps (performer's
  // m: one arm per value), recorded as workload.<key>; everywhere else (conformance, --option on
  // `conformance`, a cell) it is one value. The help says what the list means.
  bool axis = false;
  // An axis that every mode sweeps (kv_heads): each arm of a mechanism that declares the key runs once
  // per value of the list (one value: every such arm runs it), unless the mode's arm sets the key
  // itself. Without it, only a mode that reads the list sweeps it (the performer mode's m).
  bool every_mode_axis = false;
  // A size or scale of the inputs (performer's m, mamba's N, qk_scale): `conformance --generate`
  // draws inputs with it, and a conformance run reads it back from the input files, so a run that is
  // given one is refused. An option that changes the computation itself (a power, a feature map) is
  // not one: a run takes it.
  bool shapes_inputs = false;

  std::string flag() const;  // "--feature-map"
  // A command-line value, parsed and checked; UsageError naming flag() when it does not fit.
  OptionValue parse(std::string_view text) const;
  // UsageError naming flag() when `value` has another type, is not a choice, or is below the minimum.
  void check(const OptionValue& value) const;
  // Why `value` does not fit ("unknown feature map 'tanh' (use elu or relu)"), or nullopt.
  std::optional<std::string> problem(const OptionValue& value) const;
  bool accepts(const OptionValue& value) const { return !problem(value); }
  // The values allowed, as messages write them: "elu or relu", "an integer >= 1", "a number > 0".
  std::string allowed() const;
  // A value read from a report or profile (JSON), checked; UsageError naming `where` when it does not fit.
  OptionValue from_json(const nlohmann::json& value, const std::string& where) const;
  // The JSON Schema of this option's values ({"type": "integer", "minimum": 1}, {"enum": [...]}).
  nlohmann::json value_schema() const;

  // The value `options` holds under `key`, or the default: what the mechanism's code reads.
  std::string text(const MechanismOptions& options) const;
  std::int64_t integer(const MechanismOptions& options) const;
  double number(const MechanismOptions& options) const;
};

// The option values of one cell (or a workload, or an arm), by key. A key that is absent reads as
// its spec's default, so a cell built by hand with no options runs every mechanism's defaults.
class MechanismOptions {
 public:
  const OptionValue* find(std::string_view key) const;
  void set(const std::string& key, OptionValue value);
  void erase(std::string_view key);
  bool empty() const { return values_.empty(); }
  const std::map<std::string, OptionValue, std::less<>>& values() const { return values_; }
  // {"feature_map": "elu", "features": 256, ...}: every value held, in key order.
  nlohmann::json to_json() const;
  bool operator==(const MechanismOptions& other) const = default;

 private:
  std::map<std::string, OptionValue, std::less<>> values_;
};

// `options` restricted to the keys of `specs`, with every spec's default filled in where absent:
// the values a mechanism runs with, as a row of the report records them.
MechanismOptions resolved_options(const std::vector<OptionSpec>& specs, const MechanismOptions& options);

}  // namespace arch_bench
