#pragma once
// The options of `arch-bench diff` and their checks, apart from reading or writing anything: the
// seam the CLI fuzz target (tests/fuzz/fuzz_cli.cpp) drives.
#include <string>

#include <CLI/CLI.hpp>

#include "runner/diff/diff.hpp"

namespace arch_bench {

struct DiffOptions {
  std::string old_file, new_file;
  std::string format = "text";
  std::string fail_on = "regression";
  std::string min_effect = "5%";
  double alpha = 0.01;
  bool allow_workload_change = false;
  bool allow_mode_change = false;
  bool allow_hardware_change = false;
  bool allow_removed = false;
  bool allow_failure = false;
  bool allow_evidence_drop = false;
  std::string output;
};

void add_diff_options(CLI::App& command, DiffOptions& options);

// The settings the options give; throws UsageError naming the option at fault (--alpha outside
// (0, 1), a --min-effect that is not a percentage or fraction).
DiffSettings diff_settings(const DiffOptions& options);

}  // namespace arch_bench
