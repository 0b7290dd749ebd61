#include "runner/pipeline/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace arch_bench {

namespace {

// Closes the descriptor on every path out of read_input_file.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (std::uint64_t{1} << 30) && bytes % (std::uint64_t{1} << 30) == 0) {
    return fmt::format("{} GiB", bytes >> 30);
  }
  if (bytes >= (std::uint64_t{1} << 20) && bytes % (std::uint64_t{1} << 20) == 0) {
    return fmt::format("{} MiB", bytes >> 20);
  }
  return fmt::format("{} bytes", bytes);
}

[[noreturn]] void refuse_kind(const std::filesystem::path& path, std::string_view what, mode_t mode) {
  throw UsageError(fmt::format("{}: is {}, not a {}; arch-bench reads only regular files", path.string(),
                               kind_of(mode), what));
}

[[noreturn]] void refuse_size(const std::filesystem::path& path, std::string_view what, std::uint64_t cap,
                              std::string_view size) {
  throw UsageError(fmt::format("{}: {} is larger than the {} cap on input files; if this {} is meant to be that "
                               "large, set {} to a larger size (e.g. {}=1G)",
                               path.string(), size, size_text(cap), what, kMaxInputBytesVariable,
                               kMaxInputBytesVariable));
}

}  // namespace

std::uint64_t parse_byte_size(std::string_view text) {
  std::uint64_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return 0;
    value = value * 10 + digit;
  }
  if (i == 0) return 0;
  std::string_view suffix = text.substr(i);
  unsigned shift = 0;
  if (suffix == "K" || suffix == "KiB") shift = 10;
  else if (suffix == "M" || suffix == "MiB") shift = 20;
  else if (suffix == "G" || suffix == "GiB") shift = 30;
  else if (!suffix.empty()) return 0;
  if (value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return 0;
  return value << shift;
}

std::uint64_t max_input_bytes() {
  const char* text = std::getenv(kMaxInputBytesVariable);
  if (text == nullptr || *text == '\0') return kDefaultMaxInputBytes;
  const std::uint64_t bytes = parse_byte_size(text);
  if (bytes == 0) {
    throw UsageError(fmt::format("{}='{}': give the largest input file size as a positive number of bytes, "
                                 "optionally with K, M or G (e.g. 1G)",
                                 kMaxInputBytesVariable, text));
  }
  return bytes;
}

std::string read_input_file(const std::filesystem::path& path, std::string_view what) {
  const std::uint64_t cap = max_input_bytes();
  // stat before open: opening a FIFO or a device can block or have side effects (a tape rewinds).
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0) {
    const int error = errno;
    throw UsageError(fmt::format("{}: cannot be read: {}", path.string(),
                                 error == ENOENT ? std::string("no such file") : std::string(std::strerror(error))));
  }
  if (!S_ISREG(before.st_mode)) refuse_kind(path, what, before.st_mode);
  // O_NONBLOCK: should the path have been swapped for a FIFO since the stat, open still returns.
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    throw UsageError(fmt::format("{}: cannot be read: {}", path.string(), std::strerror(errno)));
  }
  struct stat opened {};
  if (::fstat(fd.get(), &opened) != 0) {
    throw UsageError(fmt::format("{}: cannot be read: {}", path.string(), std::strerror(errno)));
  }
  if (!S_ISREG(opened.st_mode)) refuse_kind(path, what, opened.st_mode);
  const auto size = static_cast<std::uint64_t>(opened.st_size);
  if (size > cap) refuse_size(path, what, cap, size_text(size));

  // Read to the end rather than st_size bytes: a file may grow while it is read, and some regular
  // files (/proc) report size 0. The cap bounds both.
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw UsageError(fmt::format("{}: cannot be read: {}", path.string(), std::strerror(errno)));
    }
    if (got == 0) break;
    if (bytes.size() + static_cast<std::uint64_t>(got) > cap) {
      refuse_size(path, what, cap, fmt::format("more than {}", size_text(cap)));
    }
    bytes.append(buffer, static_cast<std::size_t>(got));
  }
  return bytes;
}

}  // namespace arch_bench
