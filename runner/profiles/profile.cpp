#include "runner/profiles/profile.hpp"

#include <algorithm>
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

std::string known_list() {
  const std::vector<std::string> ids = known_profile_ids();
  return ids.empty() ? std::string("none found") : fmt::format("{}", fmt::join(ids, ", "));
}

std::string search_list() {
  std::vector<std::string> dirs;
  for (const fs::path& dir : profile_search_dirs()) dirs.push_back(dir.string());
  return fmt::format("{}", fmt::join(dirs, ", "));
}

fs::path resolve(const std::string& spec) {
  if (looks_like_path(spec)) {
    std::error_code error;  // a name too long for the file system is "no such file", not a crash
    if (!fs::is_regular_file(spec, error)) {
      throw UsageError(fmt::format("--profile: no profile file {} (known profiles: {})", spec, known_list()));
    }
    return spec;
  }
  if (!valid_id(spec)) {
    throw UsageError(fmt::format("--profile: '{}' is neither a profile id (letters, digits, '.', '_', '-') nor a "
                                 "path to a .json file; known profiles: {}", spec, known_list()));
  }
  for (const fs::path& dir : profile_search_dirs()) {
    const fs::path candidate = dir / (spec + ".json");
    std::error_code error;
    if (fs::is_regular_file(candidate, error)) return candidate;
  }
  throw UsageError(fmt::format("--profile: unknown profile '{}' (looked in {}); known profiles: {}; or pass a path "
                               "to a profile .json file", spec, search_list(), known_list()));
}

CacheState cache_state_from(const std::string& name) {
  return name == "hot" ? CacheState::hot : CacheState::cold;  // the schema allows only cold|hot
}

std::optional<std::string> optional_string(const nlohmann::json& object, const char* key) {
  if (!object.contains(key)) return std::nullopt;
  return object.at(key).get<std::string>();
}

}  // namespace

std::vector<fs::path> profile_search_dirs() {
  std::vector<fs::path> dirs{fs::path(".") / "profiles"};
  const fs::path source = fs::path(build_info::source_dir) / "profiles";
  std::error_code error;
  // Run from the source tree, both name the same folder; list it once.
  if (!fs::equivalent(dirs.front(), source, error)) dirs.push_back(source);
  return dirs;
}

std::vector<std::string> known_profile_ids() {
  std::set<std::string> ids;
  for (const fs::path& dir : profile_search_dirs()) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      if (entry.path().extension() == ".json") ids.insert(entry.path().stem().string());
    }
  }
  return {ids.begin(), ids.end()};
}

Profile load_profile(const std::string& spec) {
  const fs::path path = resolve(spec);
  nlohmann::json document;
  try {
    // A regular file under the input cap, nesting and numbers bounded: runner/report/json_input.hpp.
    document = read_json_input(path, "profile");
  } catch (const UsageError& error) {
    throw UsageError(fmt::format("profile file {}; fix it or pass another --profile", error.what()));
  }
  return parse_profile(document, path);
}

Profile parse_profile(const nlohmann::json& document, const fs::path& path) {
  const std::vector<std::string> errors = schema_errors(document, "profile");
  if (!errors.empty()) {
    throw UsageError(fmt::format("profile file {} does not match schemas/profile.schema.json:\n  {}\n(check it with "
                                 "`arch-bench validate --schema profile {}`)",
                                 path.string(), fmt::join(errors, "\n  "), path.string()));
  }
  Profile profile;
  profile.id = document.at("id").get<std::string>();
  // Reports name the profile by id and people find the file by that name: they must agree.
  if (profile.id != path.stem().string()) {
    throw UsageError(fmt::format("profile file {} has id '{}'; a profile's id must equal its file name ({}.json)",
                                 path.string(), profile.id, profile.id));
  }
  profile.title = document.at("title").get<std::string>();
  profile.backend = document.at("backend").get<std::string>();
  profile.evidence_level = document.at("evidence_level").get<std::string>();

  const nlohmann::json& device = document.at("device");
  profile.device.device_count_min = device.value("device_count_min", std::int64_t{0});
  profile.device.compute_capability_min = optional_string(device, "compute_capability_min");
  profile.device.driver_version_min = optional_string(device, "driver_version_min");
  profile.device.runtime_version_min = optional_string(device, "runtime_version_min");
  profile.device.logical_cores_min = device.value("logical_cores_min", std::int64_t{0});
  for (const auto& name : device.at("dtypes")) profile.device.dtypes.push_back(*parse_dtype(name.get<std::string>()));
  profile.device.free_memory_margin = device.at("free_memory_margin").get<double>();

  const nlohmann::json& measurement = document.at("measurement");
  profile.measurement.warmup = measurement.at("warmup").get<std::int64_t>();
  profile.measurement.repeats = measurement.at("repeats").get<std::int64_t>();
  profile.measurement.timing_method = measurement.at("timing_method").get<std::string>();
  profile.measurement.steps_per_sample = measurement.at("batching").at("steps_per_sample").get<std::int64_t>();
  profile.measurement.cuda_graph = measurement.at("batching").value("cuda_graph", false);
  profile.measurement.cache_state = cache_state_from(measurement.at("cache_state").get<std::string>());

  const nlohmann::json& thresholds = document.at("decision_thresholds");
  profile.thresholds.max_rel_stdev = thresholds.at("max_rel_stdev").get<double>();
  profile.thresholds.min_effect_size = thresholds.at("min_effect_size").get<double>();

  profile.path = path;
  profile.document = document;
  return profile;
}

}  // namespace arch_bench
