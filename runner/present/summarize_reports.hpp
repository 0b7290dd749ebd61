#pragma once
// From validated result reports to a Presentation: per report its identity line, hardware and
// ceilings, the decision with reasons and crossover, one table per phase (mechanism x length), and
// its charts; with several reports, a side-by-side table of the cells they share.
#include <string>
#include <vector>

#include "runner/diff/load_report.hpp"
#include "runner/present/presentation.hpp"

namespace arch_bench {

// `charts` are matched to reports by Chart::report_file == LoadedReport::file. Chart paths are
// used as given (the caller makes them relative to where the page will be).
Presentation summarize_reports(const std::vector<LoadedReport>& reports, const std::vector<Chart>& charts);

}  // namespace arch_bench
