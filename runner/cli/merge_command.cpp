// `arch-bench merge SHARD.json... --output FULL.json`: read -> validate each shard -> merge
// (runner/shard/merge.hpp) -> validate the merged report -> atomic write, never over an existing file.
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "runner/cli/commands.hpp"
#include "runner/cli/parse_fraction.hpp"
#include "runner/cli/run_options.hpp"
#include "core/errors.hpp"
#include "runner/diff/load_report.hpp"
#include "runner/plugins/load_plugin.hpp"
#include "runner/report/atomic_write.hpp"
#include "runner/report/output_path.hpp"
#include "runner/report/report.hpp"
#include "runner/report/schema_validation.hpp"
#include "runner/shard/merge.hpp"
#include "runner/present/printable_text.hpp"

namespace arch_bench {

namespace {
struct MergeOptions {
  std::vector<std::string> files;
  std::string output;
  std::vector<std::string> plugins;  // the shards' plugin mechanisms, to rebuild their plan
  bool quiet = false;
  bool allow_hardware_change = false;
  std::string ceiling_tolerance = "25%";
};

constexpr const char* kNoOverwrite = "merge never replaces a file: choose another --output";

int merge(const MergeOptions& options, const std::string& command_line) {
  if (options.output.empty()) throw UsageError("--output is empty; give the merged report's file name");
  const double ceiling_tolerance = parse_fraction(options.ceiling_tolerance, "--ceiling-tolerance");
  const std::filesystem::path output(options.output);
  check_output_file(output, "--output", false, kNoOverwrite);
  std::vector<LoadedReport> shards;
  for (const std::string& file : options.files) {
    shards.push_back(read_report(file));
    validate_report(shards.back());
  }
  const MergeContext context{command_line, utc_timestamp_now(), std::nullopt, options.allow_hardware_change,
                             ceiling_tolerance};
  const nlohmann::json merged = merge_shard_reports(shards, context);
  const std::vector<std::string> errors = schema_errors(merged, "result");
  if (!errors.empty()) {
    fmt::print(stderr, "error: the merged report does not match schemas/result.schema.json; nothing was written:\n");
    for (const std::string& error : errors) fmt::print(stderr, "  {}\n", escape_control_bytes(error));
    return 1;
  }
  write_file_atomically(output, merged.dump(2) + "\n", false, kNoOverwrite);
  if (!options.quiet) {
    fmt::print("merged {} shards of plan {} ({} rows, evidence {}): decision {}\n", shards.size(),
               merged["merged_from"]["plan_hash"].get<std::string>(), merged["metrics"]["rows"].size(),
               merged["evidence_level"].get<std::string>(), merged["decision"]["verdict"].get<std::string>());
    fmt::print("wrote {}\n", escape_control_bytes(output.string()));
  }
  return merged["failure"].is_null() ? 0 : 1;
}
}  // namespace

void register_merge_command(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* command = app.add_subcommand(
      "merge",
      "Join the reports of the N shards of one plan (`run --shard I/N`) into one report, with the mode's decision "
      "over the whole matrix; validate, diff and report read it like any other. Refuses (exit 2, naming the files) "
      "shards of different plans, workloads or tool versions, shards measured on different hardware (CPU model, GPU "
      "name, ceilings beyond --ceiling-tolerance) unless --allow-hardware-change, and duplicate or missing shards. Exit 0 merged, 1 the "
      "merged report records a failed cell, 2 refused (nothing written). Never overwrites --output.");
  command->add_option("shards", options->files, "The shard reports (one per index 0..N-1)")->required();
  command->add_option("--output", options->output, "The merged report's file (must not exist)")->required();
  command->add_flag("--quiet,-q", options->quiet, "Print nothing on success");
  command->add_flag("--allow-hardware-change", options->allow_hardware_change,
                    "Merge shards measured on different hardware (CPU model, GPU name, ceilings); the merged "
                    "report's notes name each difference");
  command->add_option("--ceiling-tolerance", options->ceiling_tolerance,
                      "How far apart two shards' measured ceilings (memory bandwidth, peak FLOP/s) may be before "
                      "they count as different hardware (25% or 0.25)")
      ->capture_default_str();
  add_plugin_option(*command, options->plugins);
  command->callback([options, &context]() {
    load_plugins(options->plugins);  // plugin mechanisms of the shards' plan
    context.exit_code = merge(*options, quoted_command_line(context.argv));
  });
}

}  // namespace arch_bench
