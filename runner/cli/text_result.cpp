#include "runner/cli/text_result.hpp"

#include <fmt/format.h>

#include "runner/report/atomic_write.hpp"

namespace arch_bench {

void add_text_output_option(CLI::App& command, std::string& output, const std::string& what) {
  const std::string text = what.empty() ? "" : what + " ";
  command.add_option(
      "--output", output,
      fmt::format("Write {}to this file (atomically; never overwrites) instead of standard output", text));
}

void check_text_output(const std::string& output) {
  if (!output.empty()) check_output_path(output, false, "choose another --output");
}

bool write_text_result(const std::string& output, const std::string& text) {
  if (output.empty()) {
    fmt::print("{}", text);
    return false;
  }
  write_file_atomically(output, text, false);
  return true;
}

}  // namespace arch_bench
