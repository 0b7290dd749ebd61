#include "runner/report/staged_folder.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace arch_bench {

namespace fs = std::filesystem;

StagedFolder::StagedFolder(fs::path folder, std::string option) : folder_(std::move(folder)), option_(std::move(option)) {
  std::error_code error;
  if (!fs::exists(folder_, error)) {
    // Only the last component is created here, so that a failure removes exactly what was made;
    // missing parents are created too, and left (they are empty folders the user asked for).
    if (folder_.has_parent_path()) fs::create_directories(folder_.parent_path(), error);
    if (::mkdir(folder_.c_str(), 0777) == 0) {
      created_ = true;
      folder_registration_ = TempPath(folder_, TempPath::Kind::folder);
    } else if (errno != EEXIST) {
      throw UsageError(fmt::format("{} {}: cannot create the folder: {}", option_, folder_.string(), std::strerror(errno)));
    }
  }
  lock_fd_ = ::open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ < 0) {
    const int saved = errno;
    if (created_) ::rmdir(folder_.c_str());
    throw UsageError(fmt::format("{} {}: cannot open the folder: {}", option_, folder_.string(), std::strerror(saved)));
  }
  // Two writers of one folder (say two `conformance --overwrite`) would leave a mix of both sets.
  // File systems without flock on folders (some NFS setups) answer something other than
  // EWOULDBLOCK; the set is still staged and moved, only unlocked.
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw UsageError(fmt::format("{} {}: another arch-bench is writing into this folder right now; wait for it to "
                                 "finish, or choose another folder",
                                 option_, folder_.string()));
  }
  std::string pattern = (folder_ / ".arch-bench-staging.XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    const int saved = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (created_) ::rmdir(folder_.c_str());
    throw UsageError(fmt::format("{} {}: cannot write into the folder: {}", option_, folder_.string(),
                                 std::strerror(saved)));
  }
  staging_ = pattern;
  staging_registration_ = TempPath(staging_, TempPath::Kind::folder);
}

StagedFolder::~StagedFolder() {
  if (!committed_) {
    remove_staging();
    if (created_) ::rmdir(folder_.c_str());  // only when empty: it was made by this object
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

fs::path StagedFolder::stage(const std::string& name) {
  names_.push_back(name);
  const fs::path path = staging_ / name;
  staged_registrations_.emplace_back(path, TempPath::Kind::file);
  return path;
}

void StagedFolder::remove_staging() noexcept {
  std::error_code error;
  if (!staging_.empty()) fs::remove_all(staging_, error);
  staged_registrations_.clear();
  staging_registration_.release();
}

std::vector<fs::path> StagedFolder::commit(bool overwrite) {
  struct Moved {
    fs::path final_path;
    fs::path backup;  // the replaced file, kept in the staging folder until the set is in place
  };
  std::vector<Moved> moved;
  auto undo = [&]() {
    for (auto it = moved.rbegin(); it != moved.rend(); ++it) {
      ::unlink(it->final_path.c_str());
      if (!it->backup.empty()) ::rename(it->backup.c_str(), it->final_path.c_str());
    }
  };
  // The moves take microseconds; a SIGINT/SIGTERM meanwhile is held until the set is complete (or
  // taken back), so that the handler never sees half of it in place.
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  struct Unblock {
    sigset_t* previous;
    ~Unblock() { pthread_sigmask(SIG_SETMASK, previous, nullptr); }
  } unblock{&previous};
  std::vector<fs::path> finals;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const fs::path staged = staging_ / names_[i];
    const fs::path final_path = folder_ / names_[i];
    Moved entry{final_path, {}};
    int status = 0;
    if (overwrite) {
      const fs::path backup = staging_ / (".replaced." + names_[i]);
      if (::rename(final_path.c_str(), backup.c_str()) == 0) entry.backup = backup;
      status = ::rename(staged.c_str(), final_path.c_str());
    } else {
      status = ::link(staged.c_str(), final_path.c_str());
    }
    if (status != 0) {
      const int saved = errno;
      if (!entry.backup.empty()) ::rename(entry.backup.c_str(), final_path.c_str());
      undo();
      throw UsageError(fmt::format("{} {}: cannot put {} in place: {}; nothing was written", option_, folder_.string(),
                                   names_[i],
                                   saved == EEXIST ? "another process created it meanwhile (files are never replaced "
                                                     "without --overwrite)"
                                                   : std::strerror(saved)));
    }
    moved.push_back(entry);
    finals.push_back(final_path);
  }
  committed_ = true;
  remove_staging();
  folder_registration_.release();
  return finals;
}

}  // namespace arch_bench
