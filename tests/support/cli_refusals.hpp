#pragma once
// The checks that a command refuses bad input as exit 2 and leaves the file system as it found it.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cli.hpp"

namespace arch_bench::testing {

// `run <arguments>`, its results directed into a fresh folder, exits 2 (bad input) with `message` in
// its standard error (any message when empty) and leaves the folder empty: nothing was written.
inline void expect_run_refused(const std::string& arguments, const std::string& message) {
  SCOPED_TRACE("run " + arguments);
  TempFolder folder;
  const CliResult result = run_cli("run " + arguments + " --results-dir '" + folder.path().string() + "'");
  EXPECT_EQ(result.exit_code, 2) << result.err;
  if (!message.empty()) {
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
  }
  EXPECT_TRUE(std::filesystem::is_empty(folder.path()));
}

// `arguments` (a whole command line) names `existing` as its output: it exits 2 saying the file
// exists, and the file keeps its bytes (results are never overwritten).
inline void expect_overwrite_refused(const std::string& arguments, const std::filesystem::path& existing) {
  SCOPED_TRACE(arguments);
  const std::string before = read_text(existing);
  const CliResult result = run_cli(arguments);
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("already exists"), std::string::npos) << result.err;
  EXPECT_EQ(read_text(existing), before);
}

}  // namespace arch_bench::testing
