#pragma once
// Environment profiles (profiles/<id>.json, schemas/profile.schema.json): the contract a run is
// made under. Loading resolves an id or a file, validates it against the schema and turns it into
// typed settings; every problem is a UsageError that names the file and says what to do.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "runner/pipeline/workload.hpp"

namespace arch_bench {

struct DeviceRequirements {
  std::int64_t device_count_min = 0;                   // cuda: GPUs needed; 0 for cpu profiles
  std::optional<std::string> compute_capability_min;   // "9.0"
  std::optional<std::string> driver_version_min;       // CUDA version the driver supports, "12.0"
  std::optional<std::string> runtime_version_min;      // CUDA runtime linked into arch-bench
  std::int64_t logical_cores_min = 0;                  // cpu
  std::vector<DType> dtypes;                           // storage dtypes this profile's evidence covers
  double free_memory_margin = 1.0;                     // free >= margin x predicted peak bytes
};

struct MeasurementSettings {
  std::int64_t warmup = 10;
  std::int64_t repeats = 100;
  std::string timing_method;  // "steady_clock" | "cuda_events"
  std::int64_t steps_per_sample = 1;
  bool cuda_graph = false;
  CacheState cache_state = CacheState::cold;
};

struct DecisionThresholds {
  double max_rel_stdev = 0;    // rows noisier than this are flagged
  double min_effect_size = 0;  // smaller relative differences are not called changes
};

struct Profile {
  std::string id;
  std::string title;
  std::string backend;         // "cpu" | "cuda"
  std::string evidence_level;  // what a run under it produces: "cpu_measured" | "gpu_measured"
  DeviceRequirements device;
  MeasurementSettings measurement;
  DecisionThresholds thresholds;
  std::filesystem::path path;  // the file it was read from
  nlohmann::json document;     // the file as read, for reports
};

// Folders searched for profiles/<id>.json, in order: ./profiles, then <source dir>/profiles
// (baked in at build time, so an installed or out-of-tree binary still finds them).
std::vector<std::filesystem::path> profile_search_dirs();
// Ids of every profile file found in the search folders, sorted, without duplicates.
std::vector<std::string> known_profile_ids();

// `spec` is a profile id (looked up in profile_search_dirs()) or a path to a .json file.
// Throws UsageError: unknown id (listing the known ones), unreadable file, not JSON, schema
// violations, or an id that differs from the file name.
Profile load_profile(const std::string& spec);
// The typed profile from an already parsed document; `path` names it in errors.
Profile parse_profile(const nlohmann::json& document, const std::filesystem::path& path);

}  // namespace arch_bench
