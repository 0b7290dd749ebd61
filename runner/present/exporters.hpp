#pragma once
// `arch-bench export`: a validated result report in the formats other tools already read. One
// file per format, siblings like google/benchmark's reporters.
#include <string>

#include "runner/diff/load_report.hpp"

namespace arch_bench {

// Google Benchmark's JSON output (the shape `--benchmark_format=json` writes): a `context` made
// from the report's hardware and identity, and per row one `iteration` run per sample plus the
// mean, median, stddev and cv aggregates, so gbench's compare.py and dashboards read it.
std::string export_gbench(const LoadedReport& report);

// One line per row (cell) with a header, RFC 4180 quoting, for spreadsheets and pandas.
std::string export_csv(const LoadedReport& report);

}  // namespace arch_bench
