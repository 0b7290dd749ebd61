// `arch-bench diff OLD.json NEW.json`: read -> compare identities -> validate -> pair and judge ->
// print (text, markdown or json) -> exit code. See runner/diff/diff.hpp.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "runner/cli/commands.hpp"
#include "runner/cli/diff_options.hpp"
#include "runner/cli/parse_fraction.hpp"
#include "runner/cli/text_result.hpp"
#include "core/errors.hpp"
#include "runner/diff/cell_format.hpp"
#include "runner/diff/diff.hpp"
#include "runner/diff/printers.hpp"
#include "runner/present/printable_text.hpp"
#include "runner/report/schema_validation.hpp"

namespace arch_bench {

namespace {
constexpr const char* kExitCodes =
    "Verdicts per row (from samples_ms): SAME (|median change| < --min-effect), FASTER / SLOWER (p < --alpha and "
    "|change| >= --min-effect), UNSURE (fewer than 8 samples a side, a large change that is not significant, or a change the host's "
    "probes explain: contention, team stalls or latency, memory bandwidth; the reason names the probe), "
    "ADDED / REMOVED (row in one report only; a REMOVED row fails unless --allow-removed; when a workload axis "
    "changed, the reason names it, e.g. dtype bfloat16 -> float32).\n"
    "Structural regressions (state_bytes grew, peak memory grew > 10% and > 64 KiB, output_finite or "
    "within_tolerance true -> false, status ok -> failed/skipped, decision verdict lowered, evidence level lowered "
    "unless --allow-evidence-drop) always fail; so does a new report whose failure is set (an interrupted run), "
    "unless --allow-failure.\n"
    "Refused (exit 2) unless allowed: different identity.workload_id or schema_version major "
    "(--allow-workload-change), different identity.mode (--allow-mode-change), different hardware: backend, CPU "
    "model or GPU name (--allow-hardware-change). An allowed difference is printed first in every format.\n"
    "Exit codes: 0 no regression; 1 regression (a SLOWER row, unless --fail-on never, or any structural "
    "regression, REMOVED row or failed new report not allowed, even with --fail-on never); 2 bad input (unreadable, "
    "not JSON, not a valid result report, a refused difference, bad option, --output exists).";

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
  check_text_output(options.output);

  const LoadedReport old_report = read_report(options.old_file);
  const LoadedReport new_report = read_report(options.new_file);
  std::vector<AllowedDifference> allowed = check_comparable(
      old_report, new_report,
      {options.allow_workload_change, options.allow_mode_change, options.allow_hardware_change});
  validate_report(old_report);
  validate_report(new_report);
  std::vector<std::string> notes = environment_notes(old_report, new_report);

  const DiffResult diff = compare_reports(old_report, new_report, settings, std::move(notes), std::move(allowed));
  // Labels, notes and reasons come from the reports: control bytes in them are shown, never obeyed.
  const std::string text = escape_control_bytes(render(diff, options.format));
  if (write_text_result(options.output, text)) {
    // The file says it first; so does the one line a CI log shows of it.
    for (const AllowedDifference& difference : diff.allowed_differences) {
      fmt::print("WARNING: {}\n", escape_control_bytes(diff_format::allowed_difference(difference)));
    }
    fmt::print("wrote {}: {}; result: {}\n", options.output, diff_format::verdict_counts(diff.summary),
               diff_format::result(diff));
  }
  return diff.summary.exit_code;  // main() flushes standard output and fails when it was lost
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
                   "Compare reports of different identity.workload_id or schema_version major (said first in the "
                   "output)");
  command.add_flag("--allow-mode-change", options.allow_mode_change,
                   "Compare reports of different identity.mode (said first in the output)");
  command.add_flag("--allow-hardware-change", options.allow_hardware_change,
                   "Compare reports measured on different hardware: backend, CPU model or GPU name (said first in "
                   "the output; timing verdicts then compare machines as much as code)");
  command.add_flag("--allow-removed", options.allow_removed,
                   "REMOVED rows (in the old report only) do not fail the diff (the result says so)");
  command.add_flag("--allow-failure", options.allow_failure,
                   "A new report whose failure is set (e.g. interrupted) does not fail the diff (the result says so)");
  command.add_flag("--allow-evidence-drop", options.allow_evidence_drop,
                   "A lower evidence level in the new report (gpu_measured -> cpu_measured, measured -> dry_run) "
                   "does not fail the diff (the result says so)");
  add_text_output_option(command, options.output, "the diff");
}

DiffSettings diff_settings(const DiffOptions& options) {
  if (!(options.alpha > 0 && options.alpha < 1)) {
    throw UsageError(fmt::format("--alpha {}: give a significance level between 0 and 1 (e.g. 0.01)", options.alpha));
  }
  DiffSettings settings;
  settings.timing.alpha = options.alpha;
  settings.timing.min_effect = parse_fraction(options.min_effect, "--min-effect");
  settings.fail_on_slower = options.fail_on == "regression";
  settings.allow_workload_change = options.allow_workload_change;
  settings.allow_mode_change = options.allow_mode_change;
  settings.allow_hardware_change = options.allow_hardware_change;
  settings.allow_removed = options.allow_removed;
  settings.allow_failure = options.allow_failure;
  settings.allow_evidence_drop = options.allow_evidence_drop;
  return settings;
}

void register_diff_command(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<DiffOptions>();
  CLI::App* command = app.add_subcommand(
      "diff", "Compare two result reports row by row: SAME / FASTER / SLOWER / UNSURE from the raw samples, plus "
              "structural changes; refuses other hardware, modes and workloads unless allowed (exit 0 no "
              "regression, 1 regression, 2 bad input or refused)");
  add_diff_options(*command, *options);
  command->footer(kExitCodes);
  command->callback([options, &context]() { context.exit_code = run_diff(*options); });
}

}  // namespace arch_bench
