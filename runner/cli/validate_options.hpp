#pragma once
// The options of `arch-bench validate` and their checks, apart from reading any file: the seam the
// CLI fuzz target (tests/fuzz/fuzz_cli.cpp) drives.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace arch_bench {

struct ValidateOptions {
  std::vector<std::string> files;
  std::string schema = "result";
};

void add_validate_options(CLI::App& command, ValidateOptions& options);

// Throws UsageError for a --schema that names no schema of schemas/.
void check_validate_options(const ValidateOptions& options);

}  // namespace arch_bench
