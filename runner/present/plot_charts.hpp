#pragma once
// Charts come from scripts/plot.py (Python 3 + matplotlib); arch-bench never draws. This runs the
// script on the report files and reads back the list of charts it wrote.
#include <filesystem>
#include <string>
#include <vector>

#include "runner/present/presentation.hpp"

namespace arch_bench {

// Overrides: the interpreter (default /usr/bin/python3, where Debian's python3-matplotlib lives,
// else python3 on PATH) and the script (default <source dir>/scripts/plot.py).
inline constexpr const char* kPythonVariable = "ARCH_BENCH_PYTHON";
inline constexpr const char* kPlotScriptVariable = "ARCH_BENCH_PLOT_SCRIPT";

struct PlotRequest {
  std::vector<std::string> report_files;  // already validated
  std::filesystem::path folder;           // created when missing; existing charts are never replaced
  bool svg = true;                        // an SVG beside every PNG
};

// Throws UsageError naming --plots when the script is missing, cannot start, or fails (its own
// message is on standard error), e.g. matplotlib is not installed or a chart file exists.
std::vector<Chart> draw_charts(const PlotRequest& request);

}  // namespace arch_bench
