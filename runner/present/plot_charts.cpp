#include "runner/present/plot_charts.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "build_info.hpp"
#include "core/errors.hpp"
#include "runner/report/json_input.hpp"

extern char** environ;

namespace arch_bench {

namespace {
namespace fs = std::filesystem;

// plot.py's exit code when matplotlib cannot be imported (scripts/plot.py, "Exit codes").
constexpr int kNoMatplotlib = 3;

std::string python_interpreter() {
  if (const char* chosen = std::getenv(kPythonVariable); chosen != nullptr && *chosen != '\0') return chosen;
  // A Python of pyenv or a venv first on PATH usually lacks matplotlib; Debian's package installs
  // it for /usr/bin/python3.
  if (::access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

fs::path plot_script() {
  if (const char* chosen = std::getenv(kPlotScriptVariable); chosen != nullptr && *chosen != '\0') return chosen;
  return fs::path(build_info::source_dir) / "scripts" / "plot.py";
}

// Runs argv[0] (searched on PATH) with its standard output into a string; standard error stays
// the terminal's, so the script's own messages reach the user. Returns the exit status.
int run_capturing_stdout(const std::vector<std::string>& words, std::string& out) {
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0) throw UsageError(fmt::format("--plots: cannot create a pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_ends[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_ends[1]);
  std::vector<char*> argv;
  for (const std::string& word : words) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  pid_t child = 0;
  const int spawned = ::posix_spawnp(&child, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_ends[1]);
  if (spawned != 0) {
    ::close(pipe_ends[0]);
    throw UsageError(fmt::format("--plots: cannot start {}: {}; install Python 3 (apt-get install python3 "
                                 "python3-matplotlib) or set {}",
                                 words.front(), std::strerror(spawned), kPythonVariable));
  }
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(pipe_ends[0], buffer, sizeof buffer);
    if (got > 0) out.append(buffer, static_cast<std::size_t>(got));
    else if (got == 0 || errno != EINTR) break;
  }
  ::close(pipe_ends[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
}  // namespace

std::vector<Chart> draw_charts(const PlotRequest& request) {
  const fs::path script = plot_script();
  if (!fs::is_regular_file(script)) {
    throw UsageError(fmt::format("--plots: the chart script {} is missing; set {} to scripts/plot.py of an "
                                 "arch-bench checkout",
                                 script.string(), kPlotScriptVariable));
  }
  std::vector<std::string> words{python_interpreter(), script.string(), "--out", request.folder.string(),
                                 "--formats", request.svg ? "png,svg" : "png", "--manifest"};
  words.push_back("--");
  for (const std::string& file : request.report_files) words.push_back(file);
  std::string out;
  const int status = run_capturing_stdout(words, out);
  if (status == kNoMatplotlib) {
    throw UsageError(fmt::format("--plots: {} cannot import matplotlib; apt-get install python3-matplotlib (or "
                                 "set {} to a Python that has it); nothing was written",
                                 words.front(), kPythonVariable));
  }
  if (status != 0) {
    throw UsageError(fmt::format("--plots: {} {} failed (exit {}; its message is above); the report was not "
                                 "written",
                                 words.front(), script.string(), status));
  }
  const nlohmann::json manifest = parse_json_input(out, "the chart list printed by " + script.string());
  std::vector<Chart> charts;
  for (const nlohmann::json& entry : manifest.value("charts", nlohmann::json::array())) {
    charts.push_back({entry.value("report", ""), entry.value("kind", ""), entry.value("title", ""),
                      entry.value("png", ""), entry.value("svg", "")});
  }
  return charts;
}

}  // namespace arch_bench
