#pragma once
// The options of `arch-bench run` and how they become a Workload.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "runner/core/workload.hpp"

namespace arch_bench {

struct RunOptions {
  std::string mode = "linear_recurrence";
  std::string sequence_lengths;  // empty: the mode's default
  std::int64_t batch = 0, heads = 0, head_dim = 0, warmup = -1, repeats = -1;  // 0/-1: mode default
  std::string dtype, phase, cache, device = "auto";
  std::string run_label = "default";
  std::string output;
  std::string results_dir = "results";
  std::uint64_t seed = 0;
  int threads = 0;  // 0: every hardware thread
  std::string semantic_id, workload_id, profile_id;
  std::string feature_map, features;
  std::int64_t state_size = 0;
  bool overwrite = false;
  bool quiet = false;
  nlohmann::json sources = nlohmann::json::object();
};

void add_run_options(CLI::App& command, RunOptions& options);
// The mode's default workload with every option the user gave applied; throws UsageError.
Workload workload_from_options(const RunOptions& options, const Workload& defaults);
// {"option": "command_line"} for every option given explicitly (the rest are mode defaults).
nlohmann::json settings_sources(const CLI::App& command);

}  // namespace arch_bench
