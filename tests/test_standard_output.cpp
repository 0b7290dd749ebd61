// What a command prints must reach standard output, or the command fails: export, report, diff,
// list and validate to a full device (/dev/full) exited 0 with the output lost (or 3, "internal
// error", when the text outgrew stdio's buffer). And what the user's files hold is shown, never
// obeyed: control bytes in an error message reach the terminal escaped.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runner/present/printable_text.hpp"
#include "support/cli.hpp"
#include "tests/support/build_paths.hpp"

namespace arch_bench {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::TempFolder;

const std::string kReport =
    (fs::path(testing::source_dir()) / "results" / "45_linear_recurrent_state_cpp-kernels-2core.json").string();

// The executable with stdout on /dev/full (every write fails with ENOSPC); stderr captured.
testing::CliResult run_to_full_device(const std::string& arguments) {
  TempFolder capture;
  const auto err = capture / "stderr";
  const std::string command = std::string("'") + testing::executable_path() + "' " + arguments + " > /dev/full 2> '" +
                              err.string() + "' < /dev/null";
  const int status = std::system(command.c_str());
  testing::CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = testing::read_text(err);
  return result;
}

TEST(StandardOutput, EveryCommandThatPrintsFailsWhenItsOutputIsLost) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  // Small outputs (list, validate: under stdio's buffer) fail at the final flush; large ones
  // (export, report, diff) at a write in the middle.
  const std::vector<std::string> commands{
      fmt::format("export '{}' --format csv", kReport), fmt::format("export '{}' --format gbench", kReport),
      fmt::format("report '{}'", kReport),              fmt::format("report '{}' --format html", kReport),
      fmt::format("diff '{}' '{}'", kReport, kReport),  fmt::format("diff '{}' '{}' --format json", kReport, kReport),
      "list",                                           "list --json",
      fmt::format("validate '{}'", kReport)};
  for (const std::string& command : commands) {
    const auto result = run_to_full_device(command);
    EXPECT_EQ(result.exit_code, 1) << command << "\n" << result.err;
    EXPECT_NE(result.err.find("could not write the output to standard output"), std::string::npos)
        << command << "\n" << result.err;
    EXPECT_EQ(result.err.find("internal error"), std::string::npos) << command << "\n" << result.err;
    // The same command with a working stdout succeeds: the failure is the lost output alone.
    EXPECT_EQ(run_cli(command).exit_code, 0) << command;
  }
}

TEST(StandardOutput, ACommandThatAlreadyFailedKeepsItsExitCode) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  TempFolder folder;
  std::ofstream(folder / "bad.json") << "{";
  const auto result = run_to_full_device(fmt::format("validate '{}'", (folder / "bad.json").string()));
  EXPECT_EQ(result.exit_code, 2) << result.err;
}

TEST(PrintableText, ControlBytesAreShownEscapedAndTextIsKept) {
  EXPECT_EQ(escape_control_bytes("plain text, tab\tand\nnewline; é ≥ 0.9"), "plain text, tab\tand\nnewline; é ≥ 0.9");
  EXPECT_EQ(escape_control_bytes("\x1b[2J\a\r\x7f"), "\\x1b[2J\\x07\\x0d\\x7f");
  EXPECT_EQ(escape_control_bytes(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escape_control_bytes("\xc2\x9b" "31m \xc2\xa0"), "\\u009b31m \xc2\xa0");  // C1 CSI escaped; NBSP kept
}

// The old error path printed the file name (and whatever of its contents a message quotes) raw: an
// ESC sequence in it could clear the screen or recolour the error.
TEST(StandardOutput, ControlBytesInAnErrorMessageReachTheTerminalEscaped) {
  TempFolder folder;
  const auto result = run_cli(fmt::format("export '{}/x\x1b[2J\a.json' --format csv", folder.path().string()));
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err.find('\x1b'), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find('\a'), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("x\\x1b[2J\\x07.json"), std::string::npos) << result.err;
  // From the file's contents: a version string the message quotes.
  std::ofstream(folder / "version.json") << R"({"schema_version": "\u001b[2J9.9.9", "metrics": 1})";
  const auto quoted = run_cli(fmt::format("export '{}' --format csv", (folder / "version.json").string()));
  EXPECT_EQ(quoted.exit_code, 2) << quoted.err;
  EXPECT_EQ(quoted.err.find('\x1b'), std::string::npos) << quoted.err;
  EXPECT_NE(quoted.err.find("\\x1b[2J9.9.9"), std::string::npos) << quoted.err;
}

// diff's text names what changed with the reports' own words (a verdict, a reason); validate names
// the file. Both reached the terminal raw.
TEST(StandardOutput, ControlBytesFromReportsAndFileNamesAreShownEscapedInDiffAndValidate) {
  TempFolder folder;
  nlohmann::json document = testing::read_json(kReport);
  document["decision"]["verdict"] = "\x1b[2Jaccept";
  const auto hostile = folder / "x\x1b]0;title\a.json";
  std::ofstream(hostile) << document.dump();
  const auto diff = run_cli(fmt::format("diff '{}' '{}' --fail-on never", kReport, hostile.string()));
  EXPECT_EQ(diff.out.find('\x1b'), std::string::npos) << diff.out;
  EXPECT_EQ(diff.out.find('\a'), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("\\x1b[2Jaccept"), std::string::npos) << diff.out;
  const auto valid = run_cli(fmt::format("validate '{}'", hostile.string()));
  EXPECT_EQ(valid.exit_code, 0) << valid.err;
  EXPECT_NE(valid.out.find("x\\x1b]0;title\\x07.json: valid"), std::string::npos) << valid.out;
  const auto missing = run_cli(fmt::format("validate '{}/gone\x1b[2J.json'", folder.path().string()));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err.find('\x1b'), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("gone\\x1b[2J.json"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace arch_bench
