#pragma once
// Where a run's report goes: results/<experiment>_<run_label>.json unless --output names the file.
// Checked in full (runner/report/output_path.hpp) before anything is measured, so that a bad path is
// exit 2 at once rather than a measurement lost at write time.
#include <cstddef>
#include <filesystem>
#include <string>

namespace arch_bench {

// The label names the result file (<experiment>_<label>.json, within a file system's 255-character
// names, the temporary name included) and is recorded in identity.run_label.
inline constexpr std::size_t kMaxRunLabel = 200;

// Throws UsageError naming --run-label for an empty label, one with characters besides letters,
// digits, '.', '_' and '-', or one longer than kMaxRunLabel.
void check_run_label(const std::string& label);

// The output options as the command line gave them.
struct OutputRequest {
  std::string output;               // --output FILE; empty: <results_dir>/<experiment>_<run_label>.json
  bool output_given = false;        // --output was typed (as '' too)
  std::string results_dir = "results";
  bool results_dir_given = false;   // --results-dir was typed (as '' too)
  bool overwrite = false;
};

// The report's path. Throws UsageError naming the option at fault (an empty --output or
// --results-dir, an existing file without --overwrite, a folder that cannot be written, ...).
std::filesystem::path checked_report_path(const OutputRequest& request, const std::string& experiment,
                                          const std::string& run_label);

}  // namespace arch_bench
