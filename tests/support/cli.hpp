#pragma once
// Runs the real arch-bench executable from a test, capturing exit code, stdout and stderr, and
// gives each test its own temporary folder.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/support/build_paths.hpp"

namespace arch_bench::testing {

// The fewest lengths, repeats and warm-ups a quiet run takes: for tests of what a run plans and
// writes (dry runs, profiles), not of what it measures.
inline const std::string kTinyRun = " --sequence-lengths 64,128 --repeats 3 --warmup 1 --quiet";

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "arch-bench-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline nlohmann::json read_json(const std::filesystem::path& path) { return nlohmann::json::parse(read_text(path)); }

// `arguments` is appended to the executable path as a shell command line (quote as needed).
inline CliResult run_cli(const std::string& arguments, const std::filesystem::path& cwd = {}) {
  TempFolder capture;
  const auto out = capture / "stdout", err = capture / "stderr";
  std::string command;
  if (!cwd.empty()) command += "cd '" + cwd.string() + "' && ";
  command += std::string("'") + executable_path() + "' " + arguments + " > '" + out.string() + "' 2> '" +
             err.string() + "' < /dev/null";
  const int status = std::system(command.c_str());
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_text(out);
  result.err = read_text(err);
  return result;
}

}  // namespace arch_bench::testing
