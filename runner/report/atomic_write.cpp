#include "runner/report/atomic_write.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "runner/report/output_path.hpp"
#include "runner/report/temp_files.hpp"

namespace arch_bench {

namespace fs = std::filesystem;

namespace {
fs::path folder_of(const fs::path& path) {
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

void ensure_folder(const fs::path& folder) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error || !fs::is_directory(folder)) {
    throw UsageError(fmt::format("cannot create output folder {}: {}", folder.string(),
                                 error ? error.message() : "not a directory"));
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw UsageError(fmt::format("output folder {} is not writable: {}", folder.string(), std::strerror(errno)));
  }
}
}  // namespace

void check_output_path(const fs::path& path, bool overwrite, const std::string& existing_hint) {
  check_output_file(path, "--output", overwrite, existing_hint);
}

void write_file_atomically(const fs::path& path, const std::string& content, bool overwrite,
                           const std::string& existing_hint) {
  const fs::path folder = folder_of(path);
  ensure_folder(folder);
  std::string temp = (folder / ("." + path.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) throw UsageError(fmt::format("cannot create a file in {}: {}", folder.string(), std::strerror(errno)));
  TempPath registered(temp, TempPath::Kind::file);  // removed by a SIGINT/SIGTERM handler meanwhile
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      throw UsageError(fmt::format("cannot write {}: {}", temp, std::strerror(saved)));
    }
    written += static_cast<std::size_t>(n);
  }
  ::fchmod(fd, 0644);
  // A full disk can surface only here (delayed allocation, NFS): the file is not complete then.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    throw UsageError(fmt::format("cannot write {}: {}", path.string(), std::strerror(saved)));
  }
  // link() refuses to replace an existing name, so a result that appeared since the early check
  // is still not overwritten; rename() replaces atomically when the user asked for it.
  const int status = overwrite ? std::rename(temp.c_str(), path.c_str()) : ::link(temp.c_str(), path.c_str());
  const int saved = errno;
  if (!overwrite || status != 0) ::unlink(temp.c_str());
  if (status != 0) {
    if (saved == EEXIST) {
      throw UsageError(fmt::format("{} was created by another process while this one ran, and existing files are "
                                   "never overwritten; {}",
                                   path.string(), existing_hint));
    }
    throw UsageError(fmt::format("cannot write {}: {}", path.string(), std::strerror(saved)));
  }
}

}  // namespace arch_bench
