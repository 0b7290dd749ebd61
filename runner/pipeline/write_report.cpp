#include "runner/pipeline/write_report.hpp"

#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "runner/report/atomic_write.hpp"

namespace arch_bench {

std::filesystem::path write_with_fallback(const std::string& text, const std::filesystem::path& output,
                                          bool overwrite) {
  try {
    write_file_atomically(output, text, overwrite, "choose another --run-label or --output (or pass --overwrite)");
    return output;
  } catch (const UsageError& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  }
  std::vector<std::filesystem::path> folders;
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir != nullptr && *tmpdir != '\0') folders.emplace_back(tmpdir);
  folders.emplace_back("/tmp");
  folders.emplace_back(".");
  const std::string stem = output.stem().string(), extension = output.extension().string();
  for (const std::filesystem::path& folder : folders) {
    std::error_code ignored;
    for (int attempt = 0; attempt < 100; ++attempt) {
      const std::filesystem::path candidate =
          folder / (attempt == 0 ? stem + extension : fmt::format("{}.{}{}", stem, attempt, extension));
      if (std::filesystem::exists(candidate, ignored)) continue;
      try {
        write_file_atomically(candidate, text, false);
        fmt::print(stderr, "error: the measurement is kept in {} instead of {}; move it there\n", candidate.string(),
                   output.string());
        return candidate;
      } catch (const UsageError&) {
      }
      break;  // that folder cannot be written: try the next one
    }
  }
  fmt::print(stderr, "error: no fallback file could be written either; the report follows on stdout\n");
  fmt::print(stdout, "{}", text);
  std::fflush(stdout);
  return "-";
}

}  // namespace arch_bench
