// `arch-bench report FILE... [--format markdown|html] [--plots DIR] [--output PATH]`: read and
// validate -> draw charts (scripts/plot.py, when --plots) -> summarize -> print -> write.
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "runner/cli/commands.hpp"
#include "runner/cli/text_result.hpp"
#include "core/errors.hpp"
#include "runner/diff/load_report.hpp"
#include "runner/present/plot_charts.hpp"
#include "runner/present/presentation.hpp"
#include "runner/present/summarize_reports.hpp"
#include "runner/report/output_path.hpp"

namespace arch_bench {

namespace {
namespace fs = std::filesystem;

struct ReportOptions {
  std::vector<std::string> files;
  std::string format = "markdown";
  std::string plots;
  bool svg = false;
  std::string output;
};

// plot.py's longest chart name: <report stem>_approximation_vs_m.svg.
std::size_t longest_chart_name(const std::vector<std::string>& files) {
  std::size_t longest = 0;
  for (const std::string& file : files) longest = std::max(longest, fs::path(file).stem().string().size());
  return longest + std::string("_approximation_vs_m.svg").size();
}

// Markdown links must work from where the Markdown is read: relative to --output's folder, or to
// the working directory when it is printed.
void relink(std::vector<Chart>& charts, const std::string& output) {
  const fs::path base = fs::absolute(output.empty() ? fs::path(".") : fs::path(output).parent_path());
  for (Chart& chart : charts) {
    for (std::string* path : {&chart.png, &chart.svg}) {
      if (!path->empty()) *path = fs::absolute(*path).lexically_normal().lexically_relative(base.lexically_normal()).string();
    }
  }
}

int run_report(const ReportOptions& options) {
  check_text_output(options.output);
  if (options.svg && options.plots.empty()) throw UsageError("--svg needs --plots DIR (the folder for the charts)");
  if (!options.plots.empty()) check_output_folder(options.plots, "--plots", longest_chart_name(options.files));

  std::vector<LoadedReport> reports;
  for (const std::string& file : options.files) {
    reports.push_back(read_report(file));
    validate_report(reports.back());
  }
  std::vector<Chart> charts;
  if (!options.plots.empty()) {
    charts = draw_charts({options.files, options.plots, options.svg});
  }
  // The HTML page reads the images now, from where they were written; Markdown links them.
  if (options.format == "markdown") relink(charts, options.output);
  const Presentation presentation = summarize_reports(reports, charts);
  const std::string text = options.format == "html" ? format_html(presentation) : format_markdown(presentation);
  if (write_text_result(options.output, text)) {
    fmt::print(stderr, "wrote {} ({} report(s), {} chart(s))\n", options.output, reports.size(), charts.size());
  }
  return 0;  // main() flushes stdout and fails when the text did not all reach it
}
}  // namespace

void register_report_command(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* command = app.add_subcommand(
      "report", "Summarize result reports for people: identity, hardware and ceilings, the decision with reasons "
                "and crossover, a table per phase (and side by side for several reports), optional charts");
  command->add_option("files", options->files, "Result reports (each is validated against the schema first)")
      ->required();
  command->add_option("--format", options->format, "markdown (GitHub; fits $GITHUB_STEP_SUMMARY) or html (one "
                                                   "self-contained page, charts inlined)")
      ->check(CLI::IsMember({"markdown", "html"}))
      ->capture_default_str();
  command->add_option("--plots", options->plots, "Draw charts into this folder with scripts/plot.py (Python 3 + "
                                                 "python3-matplotlib) as PNG, and link (markdown) or inline (html) "
                                                 "them; existing chart files are never replaced");
  command->add_flag("--svg", options->svg, "With --plots: an SVG beside every PNG (linked from the Markdown)");
  add_text_output_option(*command, options->output);
  command->footer("Exit codes: 0 written; 2 bad input (unreadable or invalid report, --output or a chart file "
                  "exists, plotting unavailable), nothing written.");
  command->callback([options, &context]() { context.exit_code = run_report(*options); });
}

}  // namespace arch_bench
