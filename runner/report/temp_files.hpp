#pragma once
// The temporary files and folders this process is writing (a result's `.name.XXXXXX` before it is
// linked into place, a staged set of .npy files), so that a SIGINT/SIGTERM handler can remove them
// instead of leaving hidden debris and half sets behind. The table is fixed-size and lock-free:
// the handler only reads it and calls unlink/rmdir, which are async-signal-safe.
#include <filesystem>

namespace arch_bench {

// Registers a path for removal on a signal until destroyed (or `release()`d). A folder is removed
// with rmdir, so only when empty: after the files registered in it. Best effort: when the table is
// full the path is simply not tracked.
class TempPath {
 public:
  enum class Kind { file, folder };
  TempPath() = default;
  TempPath(const std::filesystem::path& path, Kind kind);
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  TempPath(TempPath&& other) noexcept : slot_(other.slot_) { other.slot_ = -1; }
  TempPath& operator=(TempPath&& other) noexcept;
  ~TempPath() { release(); }
  // Stops tracking (the path was renamed into place or removed by its owner).
  void release() noexcept;

 private:
  int slot_ = -1;
};

// Removes every registered file, then every registered folder (newest first). Async-signal-safe.
void remove_registered_temp_paths() noexcept;

}  // namespace arch_bench
