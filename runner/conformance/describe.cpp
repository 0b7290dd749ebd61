// `arch-bench conformance --describe`: the file layout of each mechanism, as Markdown.
#include <fmt/format.h>

#include "mechanisms/option_catalog.hpp"
#include "mechanisms/registry.hpp"
#include "runner/conformance/conformance.hpp"

namespace arch_bench {

namespace {

// A '|' inside a cell (|x~|^2) would end it.
std::string cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// The options `id` declares (Mechanism::option_specs()), then what its adapter adds about them.
std::string options_line(const std::string& id, const ConformanceSpec& spec) {
  std::vector<std::string> declared;
  if (const Mechanism* mechanism = find_mechanism(id)) {
    for (const OptionSpec& option : mechanism->option_specs()) {
      declared.push_back(fmt::format("`{}` ({}; default {})", option.flag(), option.allowed(),
                                     option_value_text(option.default_value)));
    }
  }
  std::string line = fmt::format("{}", fmt::join(declared, ", "));
  if (!spec.options.empty()) line += (line.empty() ? "" : ". ") + spec.options;
  return line.empty() ? line : "Options: " + line + "\n\n";
}

std::string layout(const std::string& id, const ConformanceSpec& spec) {
  std::string text = fmt::format("#### `{}`\n\n", id);
  text += options_line(id, spec);
  if (!spec.notes.empty()) text += spec.notes + "\n\n";
  text += "| file | shape | dtype | meaning |\n| --- | --- | --- | --- |\n";
  for (const ConformanceInputSpec& input : spec.inputs) {
    text += fmt::format("| `{}.npy` (in) | [{}] | `<f4` or `<f8`; {} | {} |\n", input.name, fmt::join(input.axes, ", "),
                        input.parameter ? "used as fp32" : "rounded to the storage dtype", cell(input.meaning));
  }
  for (const ConformanceOutputSpec& output : spec.outputs) {
    text += fmt::format("| `{}.npy` (out) | [{}] | `{}` | {} |\n", output.name, fmt::join(output.axes, ", "),
                        npy_descr(output.dtype), cell(output.meaning));
  }
  return text;
}

}  // namespace

std::string describe_conformance_layout(const std::string& mechanism, const MechanismOptions& options) {
  const std::vector<std::string> ids =
      mechanism.empty() ? conformance_mechanisms() : std::vector<std::string>{mechanism};
  std::string text;
  for (const std::string& id : ids) {
    if (!text.empty()) text += "\n";
    text += layout(id, find_conformance_adapter(id).spec(mechanism.empty() ? declared_options_of(id, options) : options));
  }
  return text;
}

}  // namespace arch_bench
