// `arch-bench validate FILE...`: checks documents against a schema of schemas/.
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "runner/cli/commands.hpp"
#include "runner/core/errors.hpp"
#include "runner/report/schema_validation.hpp"

namespace arch_bench {

void register_validate_command(CLI::App& app, CommandContext& context) {
  struct Options {
    std::vector<std::string> files;
    std::string schema = "result";
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "validate", "Check JSON files against a schema of schemas/ (exit 0 all valid, 1 some invalid, 2 unreadable "
                  "or not JSON)");
  command->add_option("files", options->files, "Files to check")->required();
  command->add_option("--schema", options->schema, "Schema name: result, profile, preflight or diff")
      ->capture_default_str();
  command->callback([options, &context]() {
    try {
      schema_text(options->schema);
    } catch (const std::out_of_range&) {
      throw UsageError(fmt::format("--schema: no schema named '{}' in schemas/", options->schema));
    }
    int worst = 0;
    for (const std::string& file : options->files) {
      std::ifstream in(file);
      if (!in) {
        fmt::print(stderr, "{}: cannot be read\n", file);
        worst = 2;
        continue;
      }
      std::stringstream text;
      text << in.rdbuf();
      nlohmann::json document;
      try {
        document = nlohmann::json::parse(text.str());
      } catch (const nlohmann::json::parse_error& error) {
        fmt::print(stderr, "{}: not valid JSON: {}\n", file, error.what());
        worst = 2;
        continue;
      }
      const std::vector<std::string> errors = schema_errors(document, options->schema);
      if (errors.empty()) {
        fmt::print("{}: valid ({} schema)\n", file, options->schema);
        continue;
      }
      fmt::print("{}: INVALID against the {} schema\n", file, options->schema);
      for (const std::string& error : errors) fmt::print("  {}\n", error);
      worst = std::max(worst, 1);
    }
    context.exit_code = worst;
  });
}

}  // namespace arch_bench
