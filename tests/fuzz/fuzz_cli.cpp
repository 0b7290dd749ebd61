// libFuzzer target: the command line of `run`, `diff` and `validate`, parsed and checked as those
// commands do before they read, measure or write anything. The input is one word per line; the
// first picks the command (anything else is `run`). Only CLI11's ParseError and UsageError (both
// exit 2) may leave.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "runner/cli/diff_options.hpp"
#include "runner/cli/run_options.hpp"
#include "runner/cli/validate_options.hpp"
#include "core/errors.hpp"
#include "runner/pipeline/plan.hpp"

namespace {

using namespace arch_bench;

std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    words.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

// CLI11 takes the words reversed.
void parse(CLI::App& app, const std::vector<std::string>& words) {
  std::vector<std::string> reversed(words.rbegin(), words.rend() - 1);
  app.parse(reversed);
}

void check_run(const std::vector<std::string>& words) {
  CLI::App app{"run"};
  RunOptions options;
  add_run_options(app, options);
  parse(app, words);
  options.given = given_options(app);
  options.profile.clear();  // a profile is a file: fuzz_profile covers loading it
  const Mode& mode = find_mode_or_throw(options.mode);
  ResolvedSettings settings = resolve_settings(options, mode.defaults().workload, nullptr);
  resolve_timing(options, nullptr, "cpu", settings);
  validate_workload(settings.workload);
  build_plan(mode, settings.workload, "cpu");
}

void check_diff(const std::vector<std::string>& words) {
  CLI::App app{"diff"};
  DiffOptions options;
  add_diff_options(app, options);
  parse(app, words);
  diff_settings(options);
}

void check_validate(const std::vector<std::string>& words) {
  CLI::App app{"validate"};
  ValidateOptions options;
  add_validate_options(app, options);
  parse(app, words);
  check_validate_options(options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words = words_of(std::string_view(reinterpret_cast<const char*>(data), size));
  if (words.front() != "run" && words.front() != "diff" && words.front() != "validate") {
    words.insert(words.begin(), "run");
  }
  try {
    if (words.front() == "diff") check_diff(words);
    else if (words.front() == "validate") check_validate(words);
    else check_run(words);
  } catch (const CLI::ParseError&) {
  } catch (const UsageError&) {
  }
  return 0;
}
