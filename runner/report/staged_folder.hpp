#pragma once
// Writing a set of files into one folder (conformance outputs, --generate inputs) so that the
// folder never holds part of a set: the folder is locked against a second arch-bench writing into
// it (flock on the folder itself), every file is written into a hidden staging folder inside it,
// and only when all are written are they moved into place, together. On an error, or a
// SIGINT/SIGTERM (temp_files.hpp), the staging folder goes, and so does the output folder when this
// created it: nothing is left behind.
#include <filesystem>
#include <string>
#include <vector>

#include "runner/report/temp_files.hpp"

namespace arch_bench {

class StagedFolder {
 public:
  // Creates `folder` when missing and takes its lock; throws UsageError naming `option` when
  // another process holds it (nothing is waited for: a second writer is refused, clearly).
  StagedFolder(std::filesystem::path folder, std::string option);
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;
  // Without commit(): removes what was staged, and the folder when this created it.
  ~StagedFolder();

  const std::filesystem::path& folder() const { return folder_; }
  // Where to write the file `name` now; it lands in folder()/name at commit().
  std::filesystem::path stage(const std::string& name);
  // Moves every staged file into place: link() (fails if the name exists) or, with `overwrite`,
  // rename() over it. When one move fails, the files already moved are taken back (replaced ones
  // restored) and UsageError is thrown. Returns the final paths, in staging order.
  std::vector<std::filesystem::path> commit(bool overwrite);

 private:
  void remove_staging() noexcept;

  std::filesystem::path folder_;
  std::string option_;
  bool created_ = false;
  bool committed_ = false;
  int lock_fd_ = -1;
  std::filesystem::path staging_;
  TempPath folder_registration_, staging_registration_;
  std::vector<std::string> names_;
  std::vector<TempPath> staged_registrations_;
};

}  // namespace arch_bench
