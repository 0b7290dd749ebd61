#pragma once
// The check that `arch-bench run` refuses bad input before it measures or writes anything.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "support/cli.hpp"

namespace arch_bench::testing {

// `run <arguments>`, its results directed into a fresh folder, exits 2 (bad input) with `message` in
// its standard error (any message when empty) and leaves the folder empty: nothing was written.
inline void expect_run_refused(const std::string& arguments, const std::string& message) {
  SCOPED_TRACE("run " + arguments);
  TempFolder folder;
  const CliResult result = run_cli("run " + arguments + " --results-dir '" + folder.path().string() + "'");
  EXPECT_EQ(result.exit_code, 2) << result.err;
  if (!message.empty()) EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
  EXPECT_TRUE(std::filesystem::is_empty(folder.path()));
}

}  // namespace arch_bench::testing
