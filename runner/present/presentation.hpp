#pragma once
// What `arch-bench report` says about a set of result reports, apart from how it is printed: a title
// and sections of facts, tables and charts. The Markdown and HTML printers (one file each, siblings
// like google/benchmark's reporters) read only this, so a new fact or column needs no printer change.
#include <string>
#include <vector>

namespace arch_bench {

// One "label: value" line, e.g. ("hardware", "cpu, AMD EPYC, 2 logical cores").
struct Fact {
  std::string label;
  std::string value;
};

struct Table {
  std::string caption;                        // "decode", "side by side: decode", ...
  std::vector<std::string> header;
  std::vector<bool> numeric;                  // per column: right-aligned
  std::vector<std::vector<std::string>> rows; // already formatted; "-" for a missing value
};

// A chart scripts/plot.py drew for a report.
struct Chart {
  std::string report_file;  // the report it was drawn from, as the user typed it
  std::string kind;         // step_time, state_bytes, peak_memory, error, approximation_vs_m, capacity, model_capacity
  std::string title;
  std::string png;          // path as plot.py wrote it
  std::string svg;          // "" when not drawn
};

struct Section {
  std::string heading;
  std::vector<Fact> facts;
  std::vector<std::string> bullets;  // reasons, notes: one sentence each
  std::vector<Table> tables;
  std::vector<Chart> charts;
};

struct Presentation {
  std::string title;
  std::vector<Section> sections;
};

// GitHub-flavoured Markdown (a job summary, a pull request); charts are image links to their PNG
// paths as given (report_command.cpp makes them relative to the Markdown file).
std::string format_markdown(const Presentation& presentation);

// One self-contained HTML page: inline CSS, every chart PNG inlined as a data: URI, no network.
// Throws UsageError when a chart file cannot be read.
std::string format_html(const Presentation& presentation);

}  // namespace arch_bench
