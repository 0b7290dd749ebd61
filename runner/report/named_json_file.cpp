#include "runner/report/named_json_file.hpp"

#include <set>

#include <fmt/format.h>

#include "build_info.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace fs = std::filesystem;

namespace {

bool looks_like_path(const std::string& spec) {
  return spec.find('/') != std::string::npos || (spec.size() > 5 && spec.ends_with(".json"));
}

bool valid_id(const std::string& id) {
  return !id.empty() && id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
                            std::string::npos;
}

std::string known_list(const NamedJsonFolder& kind) {
  const std::vector<std::string> ids = known_named_json_ids(kind);
  return ids.empty() ? std::string("none found") : fmt::format("{}", fmt::join(ids, ", "));
}

std::string search_list(const NamedJsonFolder& kind) {
  std::vector<std::string> dirs;
  for (const fs::path& dir : named_json_search_dirs(kind)) dirs.push_back(dir.string());
  return fmt::format("{}", fmt::join(dirs, ", "));
}

}  // namespace

std::vector<fs::path> named_json_search_dirs(const NamedJsonFolder& kind) {
  std::vector<fs::path> dirs{fs::path(".") / kind.folder};
  const fs::path source = fs::path(build_info::source_dir) / kind.folder;
  std::error_code error;
  // Run from the source tree, both name the same folder; list it once.
  if (!fs::equivalent(dirs.front(), source, error)) dirs.push_back(source);
  return dirs;
}

std::vector<std::string> known_named_json_ids(const NamedJsonFolder& kind) {
  std::set<std::string> ids;
  for (const fs::path& dir : named_json_search_dirs(kind)) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      if (entry.path().extension() == ".json") ids.insert(entry.path().stem().string());
    }
  }
  return {ids.begin(), ids.end()};
}

fs::path resolve_named_json_file(const std::string& spec, const NamedJsonFolder& kind) {
  if (looks_like_path(spec)) {
    std::error_code error;  // a name too long for the file system is "no such file", not a crash
    if (!fs::is_regular_file(spec, error)) {
      throw UsageError(fmt::format("{}: no {} file {} (known {}s: {})", kind.option, kind.noun, spec, kind.noun,
                                   known_list(kind)));
    }
    return spec;
  }
  if (!valid_id(spec)) {
    throw UsageError(fmt::format("{}: '{}' is neither a {} id (letters, digits, '.', '_', '-') nor a path to a .json "
                                 "file; known {}s: {}",
                                 kind.option, spec, kind.noun, kind.noun, known_list(kind)));
  }
  for (const fs::path& dir : named_json_search_dirs(kind)) {
    const fs::path candidate = dir / (spec + ".json");
    std::error_code error;
    if (fs::is_regular_file(candidate, error)) return candidate;
  }
  throw UsageError(fmt::format("{}: unknown {} '{}' (looked in {}); known {}s: {}; or pass a path to a {} .json file",
                               kind.option, kind.noun, spec, search_list(kind), kind.noun, known_list(kind), kind.noun));
}

}  // namespace arch_bench
