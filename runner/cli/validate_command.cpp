// `arch-bench validate FILE...`: checks documents against a schema of schemas/.
#include <fmt/format.h>

#include "runner/cli/commands.hpp"
#include "runner/present/printable_text.hpp"
#include "runner/cli/validate_options.hpp"
#include "core/errors.hpp"
#include "runner/report/json_input.hpp"
#include "runner/report/schema_validation.hpp"

namespace arch_bench {

void add_validate_options(CLI::App& command, ValidateOptions& options) {
  command.add_option("files", options.files, "Files to check")->required();
  command.add_option("--schema", options.schema, "Schema name: result, profile, model, preflight or diff")
      ->capture_default_str();
}

void check_validate_options(const ValidateOptions& options) {
  try {
    schema_text(options.schema);
  } catch (const std::out_of_range&) {
    throw UsageError(fmt::format("--schema: no schema named '{}' in schemas/", options.schema));
  }
}

void register_validate_command(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* command = app.add_subcommand(
      "validate", "Check JSON files against a schema of schemas/ (exit 0 all valid, 1 some invalid, 2 unreadable, "
                  "not a regular file, over the input size cap (ARCH_BENCH_MAX_INPUT_BYTES) or not JSON)");
  add_validate_options(*command, *options);
  command->callback([options, &context]() {
    check_validate_options(*options);
    int worst = 0;
    for (const std::string& file : options->files) {
      nlohmann::json document;
      try {
        document = read_json_input(file, "JSON document");
      } catch (const UsageError& error) {
        fmt::print(stderr, "{}\n", escape_control_bytes(error.what()));
        worst = 2;
        continue;
      }
      const std::vector<std::string> errors = schema_errors(document, options->schema);
      if (errors.empty()) {
        fmt::print("{}: valid ({} schema)\n", escape_control_bytes(file), options->schema);
        continue;
      }
      // Keys and values of the document appear in the messages: shown, never obeyed by the terminal.
      fmt::print("{}: INVALID against the {} schema\n", escape_control_bytes(file), options->schema);
      for (const std::string& error : errors) fmt::print("  {}\n", escape_control_bytes(error));
      worst = std::max(worst, 1);
    }
    context.exit_code = worst;
  });
}

}  // namespace arch_bench
