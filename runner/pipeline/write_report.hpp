#pragma once
// The last step of a measuring run: the report, already validated, goes to its file atomically.
#include <filesystem>
#include <string>

namespace arch_bench {

// After measuring, a failed write (a full disk, a folder removed, the name taken meanwhile) must
// not lose the measurement: the report goes to a fallback file that is named on stderr ($TMPDIR,
// /tmp, the working folder, as <stem>[.N]<extension>), or to stdout. Returns where it went ("-" for
// stdout).
std::filesystem::path write_with_fallback(const std::string& text, const std::filesystem::path& output,
                                          bool overwrite);

}  // namespace arch_bench
