#pragma once
// A JSON file named by id or by path: profiles (profiles/<id>.json) and model presets
// (models/<id>.json) are both found this way, so both say the same things when one is missing.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace arch_bench {

struct NamedJsonFolder {
  std::string folder;  // "profiles": searched as ./<folder>, then <source dir>/<folder>
  std::string option;  // the flag that names one, for errors: "--profile"
  std::string noun;    // what one is called, for errors: "profile" ("profiles" in lists)
};

// ./<folder>, then <source dir>/<folder> (baked in at build time, so an installed or out-of-tree
// binary still finds them); one entry when both name the same folder.
std::vector<std::filesystem::path> named_json_search_dirs(const NamedJsonFolder& kind);
// Ids (file stems) of every .json file in the search folders, sorted, without duplicates.
std::vector<std::string> known_named_json_ids(const NamedJsonFolder& kind);
// `spec` is an id (looked up in the search folders) or a path to a .json file (it contains '/' or
// ends in .json). Throws UsageError naming the option: no such file, not an id, unknown id (listing
// the known ones and the folders searched).
std::filesystem::path resolve_named_json_file(const std::string& spec, const NamedJsonFolder& kind);

// The document of the file at `path` (a resolved spec), read under json_input.hpp's limits. Throws
// UsageError "<noun> file ...; fix it or pass another <option>" when it cannot be.
nlohmann::json read_named_json_file(const std::filesystem::path& path, const NamedJsonFolder& kind);

// The document of the named file at `path` must match schemas/<schema>.schema.json, and its "id" equal
// the file's name: reports name it by id and people find the file by that name. Returns the id; throws
// UsageError saying "<noun> file <path> ..." and, for the schema, the `arch-bench validate` that checks it.
std::string checked_named_json_id(const nlohmann::json& document, const std::filesystem::path& path,
                                  const std::string& schema, const std::string& noun);

}  // namespace arch_bench
