#pragma once
// Writing result files so that a reader never sees half a file and an existing result is never
// replaced by accident: the content goes to a temporary file in the same folder, is flushed, and
// is then linked into place (which fails if the name exists) or renamed over it (--overwrite).
#include <filesystem>
#include <string>

namespace arch_bench {

// Throws UsageError (with what to do instead) when the folder cannot be written or the file
// exists and `overwrite` is false (`existing_hint` says what to do then: the file appeared after
// the up-front check). The temporary file is registered (temp_files.hpp) so that a signal removes it.
void write_file_atomically(const std::filesystem::path& path, const std::string& content, bool overwrite,
                           const std::string& existing_hint = "nothing was replaced; choose another name");

// Fails early, before any measurement: check_output_file(path, "--output", ...) of output_path.hpp
// (the folder must exist or be creatable and writable, names must fit the file system, and the
// file must not exist unless `overwrite`). `existing_hint` is appended to the "exists" error.
void check_output_path(const std::filesystem::path& path, bool overwrite, const std::string& existing_hint);

}  // namespace arch_bench
