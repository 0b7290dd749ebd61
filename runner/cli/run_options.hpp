#pragma once
// The options of `arch-bench run` (and the plan options `preflight` shares with it) and how mode
// defaults, a profile and the command line merge into one Workload.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "runner/pipeline/workload.hpp"
#include "runner/modes/mode.hpp"
#include "runner/profiles/profile.hpp"

namespace arch_bench {

struct RunOptions {
  std::string mode = "linear_recurrence";
  std::string sequence_lengths;  // empty: the mode's default
  std::int64_t batch = 0, heads = 0, head_dim = 0, warmup = -1, repeats = -1;  // 0/-1: mode default
  std::int64_t rounds = 1;
  std::string dtype, phase, cache, device = "auto";
  std::string run_label = "default";
  std::string output;
  std::string results_dir = "results";
  std::string seed = "0";  // parse_seed(): 0 .. 2^63-1, as the report's schema takes it
  int threads = 0;  // 0: every CPU the process may run on (usable_cpus.hpp)
  std::string team_trial;  // --team-trial on|off (empty: on)
  std::string timing;                 // --timing: a TimingMethod name (empty: profile or backend default)
  std::int64_t steps_per_sample = 0;  // --steps-per-sample (0: profile or backend default)
  std::string semantic_id, workload_id, profile_id;
  std::string profile;  // --profile: id or file of the profile to apply (empty: none)
  std::string candidates;  // --candidates (landscape): comma-separated mechanism ids
  std::string model;       // --model: a preset id or file (runner/models/); empty: none
  double memory_gib = 0;   // --memory-gib: memory the model's capacity figures plan with (0: measured)
  std::vector<std::string> plugins;  // --plugin FILE, repeatable (runner/plugins/load_plugin.hpp)
  // The mechanisms' options (mechanisms/option_catalog.hpp): the text of each flag made from a
  // declaration, by key ("feature_map" for --feature-map), and every --option KEY=VALUE.
  std::map<std::string, std::string> option_flags;
  std::vector<std::string> option_assignments;
  bool dry_run = false;
  bool skip_cells_that_do_not_fit = false;  // --skip-cells-that-do-not-fit
  bool overwrite = false;
  bool quiet = false;
  std::string shard;  // --shard I/N or auto (runner/shard/shard_spec.hpp); empty: the whole plan
  std::set<std::string> given;  // options typed on the command line, as "sequence_lengths", "query_heads", ...
};

// The options that shape the plan and its measurement settings (--mode, --sequence-lengths, ...,
// --warmup, --repeats, --cache); `preflight` takes these too.
void add_plan_options(CLI::App& command, RunOptions& options);
// --plugin FILE (repeatable) into `plugins`; `list` and `conformance` take it too.
void add_plugin_option(CLI::App& command, std::vector<std::string>& plugins);
// One flag per option the registered built-in mechanisms and the harness declare (--feature-map,
// --features, --state-size, --qk-scale, ...), plus --option KEY=VALUE (repeatable), which reaches any
// declared key, a plugin's included. `list_on_run`: an axis option (OptionSpec::axis) takes a list.
void add_mechanism_option_flags(CLI::App& command, std::map<std::string, std::string>& flags,
                                std::vector<std::string>& assignments, bool list_on_run);
// The values of those flags and --option assignments that were given, each parsed and checked by its
// declaration (UsageError naming the flag): the single values, and the lists of axis options when
// `list_on_run` (else an axis option is one value too).
struct GivenMechanismOptions {
  MechanismOptions values;
  std::map<std::string, std::vector<OptionValue>, std::less<>> axes;
};
GivenMechanismOptions given_mechanism_options(const std::map<std::string, std::string>& flags,
                                              const std::vector<std::string>& assignments,
                                              const std::set<std::string>& given, bool list_on_run);
// add_plan_options plus what only `run` takes (--profile, --dry-run, --device, output, identity).
void add_run_options(CLI::App& command, RunOptions& options);
// The command line as typed, quoted for a POSIX shell, after "arch-bench": what a report records.
std::string quoted_command_line(const std::vector<std::string>& argv);
// Names of the options given explicitly, '-' written '_' ("--query-heads" -> "query_heads").
std::set<std::string> given_options(const CLI::App& command);

struct ResolvedSettings {
  Workload workload;
  std::string device;  // "cpu" | "cuda" | "auto"
  // Every workload setting (named as in the report's workload: "warmup", "cache_state", "heads",
  // ...) and "mode", "device" -> "mode_default" | "profile" | "command_line".
  nlohmann::json sources = nlohmann::json::object();
};

// The mode named by --mode; throws UsageError listing the known modes.
const Mode& find_mode_or_throw(const std::string& id);

// How samples are timed on `backend` ("cpu" | "cuda"): the command line's --timing and
// --steps-per-sample, else the profile's, else steady_clock x 1 on the CPU and cuda_events_batched x
// 10 on the GPU. Records the sources in `settings.sources`. Throws UsageError for a method the
// backend cannot do (a CUDA method on the CPU, steady_clock on the GPU).
void resolve_timing(const RunOptions& options, const Profile* profile, const std::string& backend,
                    ResolvedSettings& settings);

// Mode defaults, then the profile's measurement settings and backend (when `profile` is given),
// then every option typed on the command line. Throws UsageError naming the option at fault.
ResolvedSettings resolve_settings(const RunOptions& options, const Workload& mode_defaults, const Profile* profile);

}  // namespace arch_bench
