#include "runner/profiles/profile.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "runner/report/named_json_file.hpp"

namespace arch_bench {

namespace fs = std::filesystem;

namespace {

const NamedJsonFolder& profile_folder() {
  static const NamedJsonFolder kind{"profiles", "--profile", "profile"};
  return kind;
}

CacheState cache_state_from(const std::string& name) {
  return name == "hot" ? CacheState::hot : CacheState::cold;  // the schema allows only cold|hot
}

std::optional<std::string> optional_string(const nlohmann::json& object, const char* key) {
  if (!object.contains(key)) return std::nullopt;
  return object.at(key).get<std::string>();
}

}  // namespace

std::vector<fs::path> profile_search_dirs() { return named_json_search_dirs(profile_folder()); }

std::vector<std::string> known_profile_ids() { return known_named_json_ids(profile_folder()); }

Profile load_profile(const std::string& spec) {
  const fs::path path = resolve_named_json_file(spec, profile_folder());
  return parse_profile(read_named_json_file(path, profile_folder()), path);
}

Profile parse_profile(const nlohmann::json& document, const fs::path& path) {
  Profile profile;
  profile.id = checked_named_json_id(document, path, "profile", profile_folder().noun);
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
