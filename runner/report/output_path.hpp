#pragma once
// The up-front check of every path a command will write (run's report, preflight --json, diff
// --output, conformance --outputs and --generate), so that a bad path is refused with exit 2
// before any work instead of failing, or losing a measurement, at write time.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace arch_bench {

// A file about to be written atomically (runner/report/atomic_write.hpp). Throws UsageError naming
// `option` when the path is empty or ends in '/', names an existing folder, exists (unless
// `overwrite`; `existing_hint` says what to do instead), has a name longer than the file system
// takes (NAME_MAX, counting the temporary `.name.XXXXXX` written first) or is longer than
// PATH_MAX, or when its folder cannot be created or written (the nearest existing ancestor must be
// a writable folder). Creates nothing.
void check_output_file(const std::filesystem::path& path, const std::string& option, bool overwrite,
                       const std::string& existing_hint);

// A folder that will receive files named at most `longest_name` characters: the same checks on
// the folder and the names it will hold. Creates nothing.
void check_output_folder(const std::filesystem::path& folder, const std::string& option, std::size_t longest_name);

// Bytes free for an unprivileged user on the file system that `path` (or its nearest existing
// ancestor) is on; nullopt when unknown.
std::optional<std::int64_t> free_bytes_at(const std::filesystem::path& path);

// Throws UsageError naming `option` when `bytes` will not fit in free_bytes_at(path).
void check_free_space(const std::filesystem::path& path, const std::string& option, std::int64_t bytes,
                      const std::string& what);

// "1.5 GiB", "12.0 MiB", "512 bytes".
std::string bytes_text(std::int64_t bytes);

}  // namespace arch_bench
