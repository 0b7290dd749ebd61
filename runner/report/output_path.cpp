#include "runner/report/output_path.hpp"

#include <cerrno>
#include <climits>
#include <cstring>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace arch_bench {

namespace fs = std::filesystem;

namespace {

// write_file_atomically writes ".<name>.XXXXXX" first.
constexpr std::size_t kTempNameExtra = 8;

// The deepest ancestor of `path` (itself included) that exists, as an absolute path.
fs::path nearest_existing(const fs::path& path) {
  std::error_code error;
  fs::path current = fs::absolute(path, error);
  if (error) current = path;
  current = current.lexically_normal();
  while (true) {
    const fs::file_status status = fs::status(current, error);
    if (fs::exists(status)) return current;
    if (!current.has_parent_path() || current == current.parent_path()) return current;
    current = current.parent_path();
  }
}

std::size_t name_max_at(const fs::path& existing) {
  errno = 0;
  const long value = ::pathconf(existing.c_str(), _PC_NAME_MAX);
  return value > 0 ? static_cast<std::size_t>(value) : std::size_t{NAME_MAX};
}

std::string shortened(const std::string& text) {
  return text.size() <= 80 ? text : text.substr(0, 60) + fmt::format("... ({} characters)", text.size());
}

// Every component of `path` and the longest name to be created in it fit the file system; the
// whole path (plus that name) fits PATH_MAX; its nearest existing ancestor is a writable folder.
void check_location(const fs::path& folder, const std::string& option, const std::string& shown,
                    std::size_t longest_name) {
  std::error_code error;
  const fs::path existing = nearest_existing(folder.empty() ? fs::path(".") : folder);
  const std::size_t name_max = name_max_at(existing);
  for (const fs::path& part : folder) {
    if (part.native().size() > name_max) {
      throw UsageError(fmt::format("{} {}: the folder name '{}' is longer than the {} characters this file system takes",
                                   option, shortened(shown), shortened(part.native()), name_max));
    }
  }
  if (longest_name > name_max) {
    throw UsageError(fmt::format("{} {}: the file name is {} characters, and this file system takes at most {} "
                                 "(including the {}-character temporary name written first): choose a shorter name",
                                 option, shortened(shown), longest_name - kTempNameExtra, name_max - kTempNameExtra,
                                 kTempNameExtra));
  }
  const fs::path absolute = fs::absolute(folder.empty() ? fs::path(".") : folder, error);
  if (absolute.native().size() + 1 + longest_name >= PATH_MAX) {
    throw UsageError(fmt::format("{} {}: the path is longer than the {} characters Linux takes (PATH_MAX)", option,
                                 shortened(shown), PATH_MAX));
  }
  if (!fs::is_directory(existing, error)) {
    throw UsageError(fmt::format("{} {}: cannot create output folder {}: {} is not a folder", option, shortened(shown),
                                 shortened(folder.string()), shortened(existing.string())));
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    throw UsageError(fmt::format("{} {}: output folder {} is not writable: {}", option, shortened(shown),
                                 shortened(existing.string()), std::strerror(errno)));
  }
}

}  // namespace

void check_output_file(const fs::path& path, const std::string& option, bool overwrite,
                       const std::string& existing_hint) {
  const std::string& text = path.native();
  if (text.empty()) throw UsageError(fmt::format("{} is empty; give a file name", option));
  const std::string name = path.filename().native();
  if (text.back() == '/' || name.empty() || name == "." || name == "..") {
    throw UsageError(fmt::format("{} {} names a folder; give a file name in it (e.g. {}/result.json)", option,
                                 shortened(text), shortened(path.parent_path().string())));
  }
  check_location(path.parent_path(), option, text, name.size() + kTempNameExtra);
  std::error_code error;
  const fs::file_status status = fs::symlink_status(path, error);
  if (fs::is_directory(fs::status(path, error))) {
    throw UsageError(fmt::format("{} {} is a folder; give a file name", option, shortened(text)));
  }
  if (!overwrite && fs::exists(status)) {
    throw UsageError(fmt::format("{} already exists and results are never overwritten; {}", shortened(text),
                                 existing_hint));
  }
}

void check_output_folder(const fs::path& folder, const std::string& option, std::size_t longest_name) {
  const std::string& text = folder.native();
  if (text.empty()) throw UsageError(fmt::format("{} is empty; give a folder", option));
  std::error_code error;
  if (fs::exists(folder, error) && !fs::is_directory(folder, error)) {
    throw UsageError(fmt::format("{} {} exists and is not a folder", option, shortened(text)));
  }
  check_location(folder, option, text, longest_name + kTempNameExtra);
}

std::optional<std::int64_t> free_bytes_at(const fs::path& path) {
  struct statvfs facts {};
  const fs::path existing = nearest_existing(path.empty() ? fs::path(".") : path);
  if (::statvfs(existing.c_str(), &facts) != 0) return std::nullopt;
  const unsigned __int128 bytes = static_cast<unsigned __int128>(facts.f_bavail) * facts.f_frsize;
  return bytes > static_cast<unsigned __int128>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(bytes);
}

void check_free_space(const fs::path& path, const std::string& option, std::int64_t bytes, const std::string& what) {
  const std::optional<std::int64_t> free = free_bytes_at(path);
  if (free && bytes > *free) {
    throw UsageError(fmt::format("{} {}: {} needs about {}, but its file system has {} free; free some space or write "
                                 "elsewhere",
                                 option, shortened(path.string()), what, bytes_text(bytes), bytes_text(*free)));
  }
}

std::string bytes_text(std::int64_t bytes) {
  const double value = static_cast<double>(bytes);
  if (bytes >= (std::int64_t{1} << 40)) return fmt::format("{:.1f} TiB ({} bytes)", value / (1ull << 40), bytes);
  if (bytes >= (std::int64_t{1} << 30)) return fmt::format("{:.1f} GiB ({} bytes)", value / (1ull << 30), bytes);
  if (bytes >= (std::int64_t{1} << 20)) return fmt::format("{:.1f} MiB ({} bytes)", value / (1ull << 20), bytes);
  return fmt::format("{} bytes", bytes);
}

}  // namespace arch_bench
