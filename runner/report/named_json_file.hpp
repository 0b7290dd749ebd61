#pragma once
// A JSON file named by id or by path: profiles (profiles/<id>.json) and model presets
// (models/<id>.json) are both found this way, so both say the same things when one is missing.
#include <filesystem>
#include <string>
#include <vector>

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

}  // namespace arch_bench
