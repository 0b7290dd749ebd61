#include "runner/report/named_json_file.hpp"

#include <set>

#include <fmt/format.h>

#include "build_info.hpp"
#include "core/errors.hpp"
#include "runner/report/json_input.hpp"
#include "runner/report/schema_validation.hpp"

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

nlohmann::json read_named_json_file(const fs::path& path, const NamedJsonFolder& kind) {
  try {
    // A regular file under the input cap, nesting and numbers bounded: runner/report/json_input.hpp.
    return read_json_input(path, kind.noun);
  } catch (const UsageError& error) {
    throw UsageError(fmt::format("{} file {}; fix it or pass another {}", kind.noun, error.what(), kind.option));
  }
}

std::string checked_named_json_id(const nlohmann::json& document, const fs::path& path, const std::string& schema,
                                  const std::string& noun) {
  const std::vector<std::string> errors = schema_errors(document, schema);
  if (!errors.empty()) {
    throw UsageError(fmt::format("{} file {} does not match schemas/{}.schema.json:\n  {}\n(check it with "
                                 "`arch-bench validate --schema {} {}`)",
                                 noun, path.string(), schema, fmt::join(errors, "\n  "), schema, path.string()));
  }
  const std::string id = document.at("id").get<std::string>();
  if (id != path.stem().string()) {
    throw UsageError(fmt::format("{} file {} has id '{}'; a {}'s id must equal its file name ({}.json)", noun,
                                 path.string(), id, noun, id));
  }
  return id;
}

}  // namespace arch_bench
