#pragma once
// Each subcommand registers itself on the CLI11 app. Its callback stores the process exit code in
// context.exit_code (0 success, 1 failure or regression); bad input is a UsageError (exit 2).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace arch_bench {

struct CommandContext {
  std::vector<std::string> argv;  // the words after the program name, as typed
  int exit_code = 0;
};

void register_run_command(CLI::App& app, CommandContext& context);
void register_list_command(CLI::App& app, CommandContext& context);
void register_validate_command(CLI::App& app, CommandContext& context);
void register_diff_command(CLI::App& app, CommandContext& context);
void register_preflight_command(CLI::App& app, CommandContext& context);
void register_conformance_command(CLI::App& app, CommandContext& context);
void register_merge_command(CLI::App& app, CommandContext& context);
void register_report_command(CLI::App& app, CommandContext& context);
void register_export_command(CLI::App& app, CommandContext& context);

}  // namespace arch_bench
