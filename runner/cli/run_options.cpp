#include "runner/cli/run_options.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mechanisms/option_catalog.hpp"
#include "core/backends/cpu/usable_cpus.hpp"
#include "runner/cli/parse_lists.hpp"
#include "core/errors.hpp"

namespace arch_bench {

void add_plan_options(CLI::App& c, RunOptions& o) {
  c.add_option("--mode", o.mode, "Comparison preset (see `arch-bench list`)")->capture_default_str();
  c.add_option("--sequence-lengths", o.sequence_lengths,
               "Comma-separated context lengths L, e.g. 512,2048,8192 (mode default when omitted)");
  c.add_option("--batch", o.batch, "Sequences per step (default 1)");
  c.add_option("--query-heads,--heads", o.heads, "Attention heads (default 8)");
  c.add_option("--head-dim", o.head_dim, "Features per head, dk = dv (default 64)");
  c.add_option("--dtype", o.dtype, "Storage dtype: bfloat16|bf16 or float32|fp32 (fp32 accumulation)");
  c.add_option("--phase", o.phase,
               "decode (one token against a context of L), prefill (L tokens, causal) or decode,prefill");
  c.add_option("--warmup", o.warmup, "Untimed calls per cell before the timed repeats (default 10, or the profile's)");
  c.add_option("--repeats", o.repeats,
               "Timed samples per cell, every one kept in the report (default 100, or the profile's)");
  c.add_option("--rounds", o.rounds,
               "Passes over the plan that share the repeats (default 1): each pass visits every cell (prepare, "
               "warmup, repeats/rounds samples), so every cell's samples span the whole run and a slow spell of a "
               "shared host falls on all cells alike. Use 4 or more for runs that `arch-bench diff` compares");
  c.add_option("--cache", o.cache,
               "cold: evict the cell's buffers from every cache before each sample (default; what a decode "
               "step sees when many layers share the cache); hot: leave them cached");
  c.add_option("--seed", o.seed, "Seed of the random inputs, 0 to 2^63-1; baseline and candidates share it")
      ->capture_default_str();
  c.add_option("--threads", o.threads, "CPU threads (default: every CPU this process may run on, its affinity mask)");
  c.add_option("--team-trial", o.team_trial,
               "on (default): before each visit's samples, a CPU step under 0.2 ms is timed alternately on the "
               "whole team and on one thread, and the samples run on one thread when it is 5% or more faster (a "
               "short split step pays the team's fork/join; rows' one_thread_samples); off: every sample on the "
               "whole team");
  c.add_option("--candidates", o.candidates,
               "landscape: comma-separated candidate mechanisms (default: every registered mechanism but the "
               "baseline softmax_kv)");
  add_mechanism_option_flags(c, o.option_flags, o.option_assignments, true);
  add_plugin_option(c, o.plugins);
}

void add_mechanism_option_flags(CLI::App& c, std::map<std::string, std::string>& flags,
                                std::vector<std::string>& assignments, bool list_on_run) {
  for (const DeclaredOption& option : declared_options()) {
    std::string help = option.help();
    if (option.declarations.size() > 1 && option.declarations.front().first != "every mechanism") {
      std::vector<std::string> takes;
      for (const auto& [mechanism, spec] : option.declarations) takes.push_back(mechanism + ": " + spec.allowed());
      help += fmt::format(" (each mechanism runs a value it takes, its default otherwise: {})", fmt::join(takes, "; "));
    }
    if (list_on_run && option.axis()) help += " [a comma-separated list]";
    c.add_option(option.spec().flag(), flags[option.key], help)->type_name(list_on_run && option.axis() ? "LIST" : "VALUE");
  }
  c.add_option("--option", assignments,
               "KEY=VALUE: set any option a mechanism declares, a plugin's too (repeatable; the keys are the flags' "
               "names with '_': --option state_size=32 is --state-size 32; `arch-bench list` names them)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
}

GivenMechanismOptions given_mechanism_options(const std::map<std::string, std::string>& flags,
                                              const std::vector<std::string>& assignments,
                                              const std::set<std::string>& given, bool list_on_run) {
  GivenMechanismOptions out;
  std::set<std::string> seen;
  auto take = [&](const std::string& key, const std::string& text, const std::string& where) {
    const DeclaredOption option = declared_option(key, where);
    if (!seen.insert(key).second) {
      throw UsageError(fmt::format("{} is given twice ({} and --option {}=...); give it once", option.spec().flag(),
                                   option.spec().flag(), key));
    }
    if (list_on_run && option.axis()) {
      std::vector<OptionValue>& values = out.axes[key];
      for (const std::string& word : parse_word_list(option.spec().flag(), text)) values.push_back(option.parse(word));
    } else {
      out.values.set(key, option.parse(text));
    }
  };
  for (const auto& [key, text] : flags) {
    if (given.contains(key)) take(key, text, OptionSpec{.key = key}.flag());
  }
  for (const std::string& assignment : assignments) {
    const std::size_t equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw UsageError(fmt::format("--option '{}': write KEY=VALUE, e.g. --option state_size=32", assignment));
    }
    take(assignment.substr(0, equals), assignment.substr(equals + 1), "--option");
  }
  return out;
}

void add_plugin_option(CLI::App& c, std::vector<std::string>& plugins) {
  c.add_option("--plugin", plugins,
               "Load mechanisms from a plugin library (repeatable; also ARCH_BENCH_PLUGIN_PATH, colon-separated "
               "files or folders of *.so); see docs/adding-a-mechanism.md, \"Plugins\"")
      ->type_name("FILE")
      ->allow_extra_args(false);  // one file per --plugin, so a word after it is never taken as a second
}

void add_run_options(CLI::App& c, RunOptions& o) {
  add_plan_options(c, o);
  c.add_option("--profile", o.profile,
               "Run under an environment profile: ID (profiles/ID.json, looked up in ./profiles, then in the "
               "source tree) or a path to a .json file. Its measurement settings (warmup, repeats, cache) and "
               "backend apply unless given here; its preflight runs first, and when it fails nothing is "
               "measured: a dry_run report naming the failed checks is written and the exit code is 1")
      ->type_name("ID|FILE");
  c.add_option("--profile-id", o.profile_id,
               "Label only: recorded as identity.profile_id (default ARCH-CPU-MECHANISM). Loads and checks "
               "nothing and changes no setting; the run measures on the backend --device picks. Use --profile "
               "to apply and check a profile")
      ->type_name("ID");
  c.add_option("--model", o.model,
               "Measure a published model's layers: ID (models/ID.json; `arch-bench list --models`) or a path to a "
               "preset .json file. Implies --mode landscape: the model's attention (its K/V heads and window) is "
               "the baseline, its other layer types are measured at their own shapes, and every other fixed-state "
               "mechanism at the attention's shape, in decode unless --phase says otherwise; the report adds a "
               "`model` block (whole-model decode step, cache bytes per sequence, largest batch that fits). "
               "--query-heads, --head-dim and mechanism "
               "options override the preset's fields, and the report records each override")
      ->type_name("ID|FILE");
  c.add_option("--memory-gib", o.memory_gib,
               "With --model: the memory (GiB) the largest-batch figures plan with, before the weights are taken "
               "off (default: MemAvailable on the CPU, the GPU's memory with --device cuda)");
  c.add_flag("--dry-run", o.dry_run,
             "Plan only: write an evidence_level dry_run report with the planned cells and their predicted "
             "state and peak bytes; measure nothing");
  c.add_flag("--skip-cells-that-do-not-fit", o.skip_cells_that_do_not_fit,
             "A cell whose predicted process bytes exceed the memory available (MemAvailable, the cgroup's limit; "
             "on a GPU, its buffers against free device memory) becomes a skipped row saying so, and the others "
             "are measured; without it such a plan is refused with exit 2 before anything is allocated");
  c.add_option("--device", o.device,
               "cpu, cuda, or auto (CUDA when a usable GPU has kernels, else CPU; the profile's backend with "
               "--profile)")
      ->capture_default_str();
  c.add_option("--run-label", o.run_label, "Names this run; the result file is <experiment>_<run_label>.json")
      ->capture_default_str();
  c.add_option("--output", o.output, "Result file path (default results/<experiment>_<run_label>.json)");
  c.add_option("--results-dir", o.results_dir, "Folder for the default result path")->capture_default_str();
  c.add_flag("--overwrite", o.overwrite, "Replace an existing result file (never done otherwise)");
  c.add_option("--timing", o.timing,
               "How a sample is timed: steady_clock (cpu); cuda_events (events around one launch), "
               "cuda_events_batched (events around --steps-per-sample launches; the GPU default) or cuda_graph "
               "(the same launches replayed from a CUDA graph: kernel time without launch overhead)")
      ->type_name("METHOD");
  c.add_option("--steps-per-sample", o.steps_per_sample,
               "Timed units per sample for cuda_events_batched/cuda_graph (GPU default 10); samples_ms holds "
               "elapsed / steps");
  c.add_option("--semantic-id", o.semantic_id, "Identity of the mechanism question (mode default)");
  c.add_option("--workload-id", o.workload_id, "Identity of the workload definition (mode default)");
  c.add_flag("--quiet,-q", o.quiet, "No progress lines on stderr");
  c.add_option("--shard", o.shard,
               "Measure only shard I of N of the plan (0 <= I < N; cells split by predicted cost, the same split in "
               "every shard), or auto: I and N from a Slurm job array (SLURM_ARRAY_TASK_ID, _COUNT, _MIN). The "
               "report carries a shard block and decides nothing alone; join the N reports with `arch-bench merge`")
      ->type_name("I/N|auto");
}

std::string quoted_command_line(const std::vector<std::string>& argv) {
  std::string line = "arch-bench";
  for (const std::string& word : argv) {
    const bool plain = !word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                               "0123456789-_./=:,+") == std::string::npos;
    if (plain) {
      line += " " + word;
      continue;
    }
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += " " + quoted + "'";
  }
  return line;
}

std::set<std::string> given_options(const CLI::App& command) {
  std::set<std::string> given;
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0 || option->get_name() == "--help") continue;
    std::string name = option->get_single_name();
    for (char& c : name) c = c == '-' ? '_' : c;
    given.insert(name);
  }
  return given;
}

namespace {
std::int64_t positive(const char* option, std::int64_t value) {
  if (value <= 0) throw UsageError(fmt::format("{} must be a positive integer (got {})", option, value));
  return value;
}

// More threads than a few per CPU measure the scheduler, not the kernels, and libgomp cannot start
// tens of thousands of them: --threads 100000 crashed in thread creation, 8192 had not finished a
// 16-token cell after two minutes on the 2-vCPU VM. 16 per usable CPU, and at least 64, leaves room
// for any oversubscription experiment.
int checked_threads(std::int64_t asked) {
  const std::int64_t threads = positive("--threads", asked);
  const std::int64_t cpus = usable_cpus(), limit = std::max<std::int64_t>(64, 16 * cpus);
  if (threads > limit) {
    throw UsageError(fmt::format("--threads {}: at most {} here (16 per usable CPU, {} CPU(s), or 64); that many "
                                 "threads only measure the scheduler",
                                 threads, limit, cpus));
  }
  return static_cast<int>(threads);
}
}  // namespace

const Mode& find_mode_or_throw(const std::string& id) {
  if (const Mode* mode = find_mode(id)) return *mode;
  std::vector<std::string> known;
  for (const auto& mode : all_modes()) known.push_back(mode->id());
  throw UsageError(fmt::format("--mode: unknown mode '{}' (known: {})", id, fmt::join(known, ", ")));
}

void resolve_timing(const RunOptions& o, const Profile* profile, const std::string& backend,
                    ResolvedSettings& settings) {
  TimingPlan& timing = settings.workload.timing;
  const bool gpu = backend == "cuda";
  timing = gpu ? TimingPlan{TimingMethod::cuda_events_batched, 10} : TimingPlan{TimingMethod::steady_clock, 1};
  settings.sources["timing_method"] = "backend_default";
  settings.sources["steps_per_sample"] = "backend_default";
  if (profile != nullptr && profile->backend == backend) {
    if (const auto method = parse_timing_method(profile->measurement.timing_method)) {
      timing.method = *method;
      // A profile written before batched timing had a name of its own meant "events around the batch".
      if (*method == TimingMethod::cuda_events && profile->measurement.steps_per_sample > 1) {
        timing.method = TimingMethod::cuda_events_batched;
      }
      settings.sources["timing_method"] = "profile";
    }
    timing.steps_per_sample = profile->measurement.steps_per_sample;
    settings.sources["steps_per_sample"] = "profile";
  }
  if (o.given.contains("timing")) {
    const auto method = parse_timing_method(o.timing);
    if (!method) {
      throw UsageError(fmt::format("--timing: unknown method '{}' (use steady_clock, cuda_events, cuda_events_batched "
                                   "or cuda_graph)",
                                   o.timing));
    }
    timing.method = *method;
    settings.sources["timing_method"] = "command_line";
  }
  if (o.given.contains("steps_per_sample")) {
    timing.steps_per_sample = positive("--steps-per-sample", o.steps_per_sample);
    settings.sources["steps_per_sample"] = "command_line";
  }
  if (is_cuda_timing(timing.method) != gpu) {
    throw UsageError(fmt::format("--timing {} needs the {} backend, but this run measures on the {} backend{}",
                                 timing_method_name(timing.method), gpu ? "cpu" : "cuda", backend,
                                 gpu ? "" : " (use --device cuda on a machine with a usable GPU)"));
  }
  if (timing.method == TimingMethod::cuda_events && timing.steps_per_sample != 1 &&
      o.given.contains("steps_per_sample")) {
    throw UsageError("--steps-per-sample needs --timing cuda_events_batched or cuda_graph (cuda_events times one launch)");
  }
  if (timing.method == TimingMethod::cuda_events) timing.steps_per_sample = 1;
}

ResolvedSettings resolve_settings(const RunOptions& o, const Workload& defaults, const Profile* profile) {
  ResolvedSettings resolved;
  Workload& w = resolved.workload;
  w = defaults;
  nlohmann::json& sources = resolved.sources;
  for (const char* key : {"mode", "sequence_lengths", "batch", "heads", "head_dim", "dtype", "phases", "warmup",
                          "repeats", "rounds", "cache_state", "threads", "team_trial", "seed", "device"}) {
    sources[key] = "mode_default";
  }
  for (const DeclaredOption& option : declared_options()) sources[option.key] = "mode_default";
  resolved.device = o.device;

  if (profile != nullptr) {
    w.warmup = profile->measurement.warmup;
    w.repeats = profile->measurement.repeats;
    w.cache_state = profile->measurement.cache_state;
    resolved.device = profile->backend;
    for (const char* key : {"warmup", "repeats", "cache_state", "device"}) sources[key] = "profile";
  }

  // Each option typed on the command line wins over the profile and the mode default.
  auto given = [&](const char* option, const char* setting) {
    if (!o.given.contains(option)) return false;
    sources[setting] = "command_line";
    return true;
  };
  given("mode", "mode");
  if (given("sequence_lengths", "sequence_lengths")) {
    w.sequence_lengths = parse_positive_list("--sequence-lengths", o.sequence_lengths);
  }
  if (given("batch", "batch")) w.batch = positive("--batch", o.batch);
  if (given("query_heads", "heads")) w.heads = positive("--query-heads", o.heads);
  if (given("head_dim", "head_dim")) w.head_dim = positive("--head-dim", o.head_dim);
  if (given("dtype", "dtype")) {
    const auto dtype = parse_dtype(o.dtype);
    if (!dtype) throw UsageError(fmt::format("--dtype: unknown dtype '{}' (use bfloat16/bf16 or float32/fp32)", o.dtype));
    w.dtype = *dtype;
  }
  if (given("phase", "phases")) {
    w.phases.clear();
    for (const std::string& word : parse_word_list("--phase", o.phase)) {
      if (word == "decode") w.phases.push_back(Phase::decode);
      else if (word == "prefill") w.phases.push_back(Phase::prefill);
      else throw UsageError(fmt::format("--phase: unknown phase '{}' (use decode, prefill or decode,prefill)", word));
    }
  }
  if (given("warmup", "warmup")) {
    if (o.warmup < 0) throw UsageError(fmt::format("--warmup must be >= 0 (got {})", o.warmup));
    w.warmup = o.warmup;
  }
  if (given("repeats", "repeats")) w.repeats = positive("--repeats", o.repeats);
  if (given("rounds", "rounds")) w.rounds = positive("--rounds", o.rounds);
  if (given("cache", "cache_state")) {
    if (o.cache == "cold") w.cache_state = CacheState::cold;
    else if (o.cache == "hot") w.cache_state = CacheState::hot;
    else throw UsageError(fmt::format("--cache: '{}' is neither cold nor hot", o.cache));
  }
  w.threads = given("threads", "threads") ? checked_threads(o.threads) : usable_cpus();
  if (given("team_trial", "team_trial")) {
    if (o.team_trial == "on") w.team_trial = true;
    else if (o.team_trial == "off") w.team_trial = false;
    else throw UsageError(fmt::format("--team-trial: '{}' is neither on nor off", o.team_trial));
  }
  given("seed", "seed");
  w.seed = parse_seed("--seed", o.seed);
  if (given("candidates", "candidates")) {
    if (o.mode != "landscape") {
      throw UsageError(fmt::format("--candidates applies to --mode landscape; mode {} has fixed arms (see `arch-bench "
                                   "list`)",
                                   o.mode));
    }
    w.candidates = parse_word_list("--candidates", o.candidates);
    for (std::size_t i = 0; i < w.candidates.size(); ++i) {
      if (std::find(w.candidates.begin(), w.candidates.begin() + static_cast<std::ptrdiff_t>(i), w.candidates[i]) !=
          w.candidates.begin() + static_cast<std::ptrdiff_t>(i)) {
        throw UsageError(fmt::format("--candidates: {} is named twice", w.candidates[i]));
      }
    }
  }
  // The mechanisms' options: each flag given (and each --option) is parsed by its declaration.
  const GivenMechanismOptions options = given_mechanism_options(o.option_flags, o.option_assignments, o.given, true);
  for (const auto& [key, value] : options.values.values()) {
    w.options.set(key, value);
    sources[key] = "command_line";
  }
  for (const auto& [key, values] : options.axes) {
    w.axes[key] = values;
    sources[key] = "command_line";
  }

  if (o.device != "cpu" && o.device != "cuda" && o.device != "auto") {
    throw UsageError(fmt::format("--device: '{}' is not cpu, cuda or auto", o.device));
  }
  if (given("device", "device") && o.device != "auto") {
    // A profile is a contract about one backend; measuring elsewhere under its name would mislabel
    // the evidence.
    if (profile != nullptr && o.device != profile->backend) {
      throw UsageError(fmt::format("--device {} contradicts profile {} (backend {}); drop --device, pick a profile "
                                   "for {} (see profiles/), or use --profile-id to only label the run",
                                   o.device, profile->id, profile->backend, o.device));
    }
    resolved.device = o.device;
  } else if (profile != nullptr) {
    sources["device"] = "profile";  // `--device auto` defers to the profile
  }
  return resolved;
}

}  // namespace arch_bench
