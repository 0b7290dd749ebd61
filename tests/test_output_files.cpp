// Output paths checked up front, sets of files staged and moved into place together, temporary
// files registered for a signal handler to remove (runner/report/output_path, staged_folder,
// temp_files).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "runner/report/atomic_write.hpp"
#include "runner/report/output_path.hpp"
#include "runner/report/staged_folder.hpp"
#include "runner/report/temp_files.hpp"
#include "support/cli.hpp"
#include "support/usage_error.hpp"

namespace arch_bench {
namespace {

namespace fs = std::filesystem;
using testing::TempFolder;

using testing::usage_error_or_empty;

std::vector<std::string> entries(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutputPath, RefusesEveryPathThatWouldFailAtWriteTime) {
  TempFolder folder;
  std::ofstream(folder / "file") << "x";
  auto check = [](const fs::path& path) {
    return usage_error_or_empty([&] { check_output_file(path, "--output", false, "choose another"); });
  };
  EXPECT_NE(check("").find("--output is empty"), std::string::npos);
  EXPECT_NE(check(folder / "newdir/").find("names a folder"), std::string::npos);
  EXPECT_NE(check(folder.path()).find("is a folder"), std::string::npos);
  EXPECT_NE(check(folder / "file").find("already exists"), std::string::npos);
  EXPECT_NE(check(folder / "file" / "r.json").find("output folder"), std::string::npos);
  // 250 characters fit NAME_MAX (255) but not with the temporary ".name.XXXXXX" written first.
  EXPECT_NE(check(folder / (std::string(246, 'n') + ".json")).find("file system takes at most 247"), std::string::npos);
  EXPECT_EQ(check(folder / (std::string(242, 'n') + ".json")), "");
  EXPECT_NE(check(folder / std::string(5000, 'n')).find("5000 characters"), std::string::npos);
  fs::path deep = folder.path();
  while (deep.native().size() < 4200) deep /= std::string(200, 'd');
  EXPECT_NE(check(deep / "r.json").find("PATH_MAX"), std::string::npos);
  // Missing parents are fine (created at write time), and nothing was created by the checks.
  EXPECT_EQ(check(folder / "a" / "b" / "r.json"), "");
  EXPECT_EQ(entries(folder.path()), std::vector<std::string>{"file"});
  EXPECT_EQ(usage_error_or_empty([&] { check_output_file(folder / "file", "--json", true, ""); }), "");
}

TEST(OutputPath, FreeSpaceIsCheckedAgainstTheNearestExistingFolder) {
  TempFolder folder;
  const auto free = free_bytes_at(folder / "missing" / "deeper");
  ASSERT_TRUE(free.has_value());
  EXPECT_GT(*free, 0);
  EXPECT_NE(usage_error_or_empty([&] { check_free_space(folder / "x", "--outputs", INT64_MAX / 2, "the outputs"); })
                .find("free"),
            std::string::npos);
  EXPECT_EQ(usage_error_or_empty([&] { check_free_space(folder / "x", "--outputs", 1, "the outputs"); }), "");
}

TEST(AtomicWrite, ARaceLostMessageSaysWhatHappenedWithoutNamingRunOptions) {
  TempFolder folder;
  write_file_atomically(folder / "r.json", "one", false);
  const std::string message = usage_error_or_empty([&] { write_file_atomically(folder / "r.json", "two", false); });
  EXPECT_NE(message.find("created by another process"), std::string::npos) << message;
  EXPECT_EQ(message.find("--run-label"), std::string::npos) << message;
  EXPECT_EQ(entries(folder.path()), std::vector<std::string>{"r.json"});  // no temporary left
}

TEST(StagedFolder, CommitMovesTheWholeSetAndAFailureLeavesNothing) {
  TempFolder folder;
  const fs::path target = folder / "out";
  {
    StagedFolder staged(target, "--outputs");
    write_file_atomically(staged.stage("a.npy"), "a", false);
    write_file_atomically(staged.stage("b.npy"), "b", false);
    EXPECT_TRUE(fs::exists(target));
    EXPECT_FALSE(fs::exists(target / "a.npy"));  // nothing in place before commit
  }  // no commit: an error happened
  EXPECT_FALSE(fs::exists(target));  // created by the staging, so removed with it

  fs::create_directory(target);
  std::ofstream(target / "keep.txt") << "user's";
  {
    StagedFolder staged(target, "--outputs");
    write_file_atomically(staged.stage("a.npy"), "a", false);
  }
  EXPECT_EQ(entries(target), std::vector<std::string>{"keep.txt"});  // an existing folder stays, untouched

  StagedFolder staged(target, "--outputs");
  write_file_atomically(staged.stage("a.npy"), "a", false);
  write_file_atomically(staged.stage("b.npy"), "b", false);
  const std::vector<fs::path> written = staged.commit(false);
  EXPECT_EQ(written, (std::vector<fs::path>{target / "a.npy", target / "b.npy"}));
  EXPECT_EQ(entries(target), (std::vector<std::string>{"a.npy", "b.npy", "keep.txt"}));
}

TEST(StagedFolder, ACommitThatMeetsAnExistingFileTakesBackWhatItMoved) {
  TempFolder folder;
  const fs::path target = folder / "out";
  fs::create_directory(target);
  std::ofstream(target / "b.npy") << "someone else's";
  StagedFolder staged(target, "--outputs");
  write_file_atomically(staged.stage("a.npy"), "a", false);
  write_file_atomically(staged.stage("b.npy"), "b", false);
  const std::string message = usage_error_or_empty([&] { staged.commit(false); });
  EXPECT_NE(message.find("another process created it"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(target / "a.npy"));
  EXPECT_EQ(testing::read_text(target / "b.npy"), "someone else's");
}

TEST(StagedFolder, OverwriteReplacesTheSet) {
  TempFolder folder;
  const fs::path target = folder / "out";
  fs::create_directory(target);
  std::ofstream(target / "a.npy") << "old";
  StagedFolder staged(target, "--outputs");
  write_file_atomically(staged.stage("a.npy"), "new", false);
  staged.commit(true);
  EXPECT_EQ(testing::read_text(target / "a.npy"), "new");
  EXPECT_EQ(entries(target), std::vector<std::string>{"a.npy"});
}

TEST(StagedFolder, ASecondWriterOfTheSameFolderIsRefused) {
  TempFolder folder;
  StagedFolder first(folder / "out", "--outputs");
  const std::string message = usage_error_or_empty([&] { StagedFolder second(folder / "out", "--outputs"); });
  EXPECT_NE(message.find("another arch-bench is writing into this folder"), std::string::npos) << message;
}

TEST(TempFiles, RegisteredPathsAreRemovedFilesFirstThenFoldersNewestFirst) {
  TempFolder folder;
  const fs::path outer = folder / "outer", inner = outer / "inner", file = inner / "f.tmp", kept = folder / "kept";
  fs::create_directories(inner);
  std::ofstream(file) << "x";
  std::ofstream(kept) << "x";
  TempPath outer_registration(outer, TempPath::Kind::folder);
  TempPath inner_registration(inner, TempPath::Kind::folder);
  TempPath file_registration(file, TempPath::Kind::file);
  {
    TempPath released(kept, TempPath::Kind::file);
  }
  remove_registered_temp_paths();
  EXPECT_FALSE(fs::exists(outer));
  EXPECT_TRUE(fs::exists(kept));
}

}  // namespace
}  // namespace arch_bench
