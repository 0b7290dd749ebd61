#include "runner/pipeline/report_path.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "runner/report/output_path.hpp"

namespace arch_bench {

void check_run_label(const std::string& label) {
  if (label.empty() || label.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                                               "._-") != std::string::npos) {
    throw UsageError(fmt::format("--run-label '{}' may use only letters, digits, '.', '_' and '-'",
                                 label.size() > 80 ? label.substr(0, 60) + "..." : label));
  }
  if (label.size() > kMaxRunLabel) {
    throw UsageError(fmt::format("--run-label is {} characters; at most {} (it names the result file)", label.size(),
                                 kMaxRunLabel));
  }
}

std::filesystem::path checked_report_path(const OutputRequest& request, const std::string& experiment,
                                          const std::string& run_label) {
  // Given as '', these would otherwise read as not given at all.
  if (request.output_given && request.output.empty()) {
    throw UsageError("--output is empty; give a file name (or leave --output out for the default path)");
  }
  if (request.results_dir_given && request.results_dir.empty()) {
    throw UsageError("--results-dir is empty; give a folder (or leave it out for results/)");
  }
  const bool explicit_output = !request.output.empty();
  const std::filesystem::path output =
      explicit_output ? std::filesystem::path(request.output)
                      : std::filesystem::path(request.results_dir) / fmt::format("{}_{}.json", experiment, run_label);
  check_output_file(output, explicit_output ? "--output" : "--results-dir/--run-label", request.overwrite,
                    "choose another --run-label (or --output), or pass --overwrite");
  return output;
}

}  // namespace arch_bench
