#pragma once
// Reports committed under results/ that the presentation tests (export, report) read as real input,
// named once so that a renamed result file is fixed in one place.
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "tests/support/build_paths.hpp"

namespace arch_bench::testing {

inline const std::filesystem::path kResults = std::filesystem::path(source_dir()) / "results";
inline const std::string kLinearReport = (kResults / "45_linear_recurrent_state_cpp-kernels-2core.json").string();
inline const std::string kPerformerReport = (kResults / "performer_favor_cpp-kernels-2core.json").string();

// kLinearReport as a test has tampered with it (hostile text in its fields): `edit` changes the
// document, written to folder/hostile.json, whose path is returned.
template <class Edit>
std::filesystem::path tampered_linear_report(const TempFolder& folder, Edit edit) {
  nlohmann::json document = read_json(kLinearReport);
  edit(document);
  const std::filesystem::path path = folder / "hostile.json";
  std::ofstream(path) << document.dump();
  return path;
}

}  // namespace arch_bench::testing
