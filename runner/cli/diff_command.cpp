// `arch-bench diff OLD.json NEW.json`: read -> compare identities -> validate -> pair and judge ->
// print (text, markdown or json) -> exit code. See runner/diff/diff.hpp.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "runner/cli/commands.hpp"
#include "runner/cli/diff_options.hpp"
#include "core/errors.hpp"
#include "runner/diff/cell_format.hpp"
#include "runner/diff/diff.hpp"
#include "runner/diff/printers.hpp"
#include "runner/present/printable_text.hpp"
#include "runner/report/atomic_write.hpp"
#include "runner/report/schema_validation.hpp"

namespace arch_bench {

namespace {
constexpr const char* kExitCodes =
    "Verdicts per row (from samples_ms): SAME (|median change| < --min-effect), FASTER / SLOWER (p < --alpha and "
    "|change| >= --min-effect), UNSURE (fewer than 8 samples a side, a large change that is not significant, or a change the host's "
    "probes explain: contention, team stalls or latency, memory bandwidth; the reason names the probe), "
    "ADDED / REMOVED (row in one report only; reported, never failing).\n"
    "Structural regressions (state_bytes grew, peak memory grew > 10% and > 64 KiB, output_finite or "
    "within_tolerance true -> false, status ok -> failed/skipped, decision verdict or evidence level lowered) "
    "always fail.\n"
    "Exit codes: 0 no regression; 1 regression (a SLOWER row, unless --fail-on never, or any structural "
    "regression, even with --fail-on never); 2 bad input (unreadable, not JSON, not a valid result report, "
    "different workload_id or schema_version major without --allow-workload-change, bad option, --output exists).";

// "5%" or "0.05"; a bare number >= 1 is refused, because "5" is more likely 5% than 500%.
double parse_min_effect(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  std::size_t used = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !std::isfinite(value) || value < 0) {
    throw UsageError(fmt::format("--min-effect '{}': give a non-negative percentage (5%) or fraction (0.05)", text));
  }
  if (!percent && value >= 1) {
    throw UsageError(fmt::format("--min-effect '{}' is ambiguous; write {}% for a percentage or a fraction below 1",
                                 text, text));
  }
  return percent ? value / 100 : value;
}

std::string render(const DiffResult& diff, const std::string& format) {
  if (format == "markdown") return format_diff_markdown(diff);
  if (format == "text") return format_diff_text(diff);
  const nlohmann::json document = diff_to_json(diff);
  const std::vector<std::string> errors = schema_errors(document, "diff");
  if (!errors.empty()) {
    std::string message = "the diff does not match schemas/diff.schema.json; nothing was written:";
    for (const std::string& error : errors) message += "\n  " + error;
    throw std::logic_error(message);
  }
  return document.dump(2) + "\n";
}

int run_diff(const DiffOptions& options) {
  const DiffSettings settings = diff_settings(options);
  if (!options.output.empty()) check_output_path(options.output, false, "choose another --output");

  const LoadedReport old_report = read_report(options.old_file);
  const LoadedReport new_report = read_report(options.new_file);
  std::vector<std::string> notes = check_comparable(old_report, new_report, options.allow_workload_change);
  for (std::string& note : notes) note += " (compared because of --allow-workload-change)";
  validate_report(old_report);
  validate_report(new_report);
  for (std::string& note : environment_notes(old_report, new_report)) notes.push_back(std::move(note));

  const DiffResult diff = compare_reports(old_report, new_report, settings, std::move(notes));
  // Labels, notes and reasons come from the reports: control bytes in them are shown, never obeyed.
  const std::string text = escape_control_bytes(render(diff, options.format));
  if (options.output.empty()) {
    fmt::print("{}", text);
  } else {
    write_file_atomically(options.output, text, false);
    fmt::print("wrote {}: {}; result: {}\n", options.output, diff_format::verdict_counts(diff.summary),
               diff_format::result(diff));
  }
  std::fflush(stdout);
  return diff.summary.exit_code;
}
}  // namespace

void add_diff_options(CLI::App& command, DiffOptions& options) {
  command.add_option("old", options.old_file, "The baseline result report (e.g. from the main branch)")->required();
  command.add_option("new", options.new_file, "The result report to judge against it")->required();
  command.add_option("--format", options.format, "Output: text (aligned table), markdown (CI job summary) or json "
                                                 "(schemas/diff.schema.json)")
      ->check(CLI::IsMember({"text", "markdown", "json"}))
      ->capture_default_str();
  command.add_option("--fail-on", options.fail_on, "regression: a SLOWER row fails (exit 1); never: SLOWER rows "
                                                   "are reported only (structural regressions still fail)")
      ->check(CLI::IsMember({"regression", "never"}))
      ->capture_default_str();
  command.add_option("--min-effect", options.min_effect, "Smallest change of the median step time that counts "
                                                         "(5% or 0.05)")
      ->capture_default_str();
  command.add_option("--alpha", options.alpha, "Significance level of the two-sided Mann-Whitney U test")
      ->capture_default_str();
  command.add_flag("--allow-workload-change", options.allow_workload_change,
                   "Compare reports of different identity.workload_id or schema_version major (noted in the output)");
  command.add_option("--output", options.output, "Write the diff to this file (atomically; never overwrites) "
                                                 "instead of standard output");
}

DiffSettings diff_settings(const DiffOptions& options) {
  if (!(options.alpha > 0 && options.alpha < 1)) {
    throw UsageError(fmt::format("--alpha {}: give a significance level between 0 and 1 (e.g. 0.01)", options.alpha));
  }
  DiffSettings settings;
  settings.timing.alpha = options.alpha;
  settings.timing.min_effect = parse_min_effect(options.min_effect);
  settings.fail_on_slower = options.fail_on == "regression";
  settings.allow_workload_change = options.allow_workload_change;
  return settings;
}

void register_diff_command(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<DiffOptions>();
  CLI::App* command = app.add_subcommand(
      "diff", "Compare two result reports row by row: SAME / FASTER / SLOWER / UNSURE from the raw samples, plus "
              "structural changes (exit 0 no regression, 1 regression, 2 bad input)");
  add_diff_options(*command, *options);
  command->footer(kExitCodes);
  command->callback([options, &context]() { context.exit_code = run_diff(*options); });
}

}  // namespace arch_bench
