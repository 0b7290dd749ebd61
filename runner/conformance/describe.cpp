// `arch-bench conformance --describe`: the file layout of each mechanism, as Markdown.
#include <fmt/format.h>

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

std::string layout(const std::string& id, const ConformanceSpec& spec) {
  std::string text = fmt::format("#### `{}`\n\n", id);
  if (!spec.options.empty()) text += fmt::format("Options: {}\n\n", spec.options);
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
    text += layout(id, find_conformance_adapter(id).spec(options));
  }
  return text;
}

}  // namespace arch_bench
