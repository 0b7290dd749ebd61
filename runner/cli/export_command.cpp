// `arch-bench export FILE --format gbench|csv [--output PATH]`: read and validate -> convert -> write.
#include <memory>

#include <fmt/format.h>

#include "runner/cli/commands.hpp"
#include "runner/cli/text_result.hpp"
#include "runner/diff/load_report.hpp"
#include "runner/present/exporters.hpp"

namespace arch_bench {

namespace {
struct ExportOptions {
  std::string file;
  std::string format;
  std::string output;
};

int run_export(const ExportOptions& options) {
  check_text_output(options.output);
  const LoadedReport report = read_report(options.file);
  validate_report(report);
  const std::string text = options.format == "gbench" ? export_gbench(report) : export_csv(report);
  if (write_text_result(options.output, text)) fmt::print(stderr, "wrote {} ({})\n", options.output, options.format);
  return 0;  // main() flushes stdout and fails when the text did not all reach it
}
}  // namespace

void register_export_command(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* command = app.add_subcommand(
      "export", "Write a result report in another tool's format: gbench (Google Benchmark JSON, for compare.py "
                "and dashboards) or csv (one line per cell, for spreadsheets and pandas)");
  command->add_option("file", options->file, "A result report (validated against the schema first)")->required();
  command->add_option("--format", options->format, "gbench or csv")
      ->check(CLI::IsMember({"gbench", "csv"}))
      ->required();
  add_text_output_option(*command, options->output);
  command->footer("Exit codes: 0 written; 2 bad input (unreadable or invalid report, bad --format, --output "
                  "exists), nothing written.");
  command->callback([options, &context]() { context.exit_code = run_export(*options); });
}

}  // namespace arch_bench
