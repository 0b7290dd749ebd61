#pragma once
// What `arch-bench run` asks the pipeline for, once the command line is parsed and merged with the
// mode's defaults and the profile (runner/cli/run_options.hpp): every choice made, nothing measured.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runner/modes/mode.hpp"
#include "runner/pipeline/choose_backend.hpp"
#include "runner/pipeline/report_path.hpp"
#include "runner/pipeline/workload.hpp"
#include "runner/profiles/profile.hpp"
#include "runner/shard/shard_spec.hpp"

namespace arch_bench {

struct RunRequest {
  const Mode* mode = nullptr;
  std::optional<Profile> profile;   // --profile: applied, its preflight run before measuring
  Workload workload;                // mode defaults, profile and command line; timing for `backend`
  nlohmann::json settings_sources = nlohmann::json::object();  // the report's settings_sources
  BackendChoice backend;
  std::optional<ShardSpec> shard;   // --shard: this process measures its part of the plan only
  // The report's identity as given (the mode's defaults where the command line gave none).
  std::string semantic_id, workload_id, run_label, profile_id;
  std::string command_line;         // as typed, quoted for a shell
  std::string experiment;           // the result file's stem; empty: the mode's (--model: landscape_<id>)
  OutputRequest output;
  bool dry_run = false;             // --dry-run: write the plan, measure nothing
  // --skip-cells-that-do-not-fit: a cell without the memory it needs becomes a skipped row rather
  // than a refusal of the whole plan (check_resources.hpp).
  bool skip_cells_that_do_not_fit = false;
  std::string omp_wait_policy;      // the report's workload.omp_wait_policy
};

}  // namespace arch_bench
