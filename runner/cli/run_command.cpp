// `arch-bench run`: the options (run_options.hpp) become a RunRequest, and the run pipeline
// (runner/pipeline/run_pipeline.hpp: plan -> preflight -> ceilings -> measure -> decide -> report ->
// validate -> atomic write) takes it from there; this file prints what came back and picks the exit
// code. A dry run, or a failed preflight, stops after the plan and writes a dry_run report instead.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "runner/cli/commands.hpp"
#include "runner/cli/omp_spin_policy.hpp"
#include "runner/cli/run_options.hpp"
#include "runner/cli/signals.hpp"
#include "runner/models/model_request.hpp"
#include "core/errors.hpp"
#include "runner/pipeline/choose_backend.hpp"
#include "runner/pipeline/report_path.hpp"
#include "runner/pipeline/run_pipeline.hpp"
#include "runner/plugins/load_plugin.hpp"
#include "runner/preflight/dry_run.hpp"
#include "runner/preflight/preflight_report.hpp"
#include "runner/profiles/profile.hpp"
#include "runner/report/console_table.hpp"
#include "runner/shard/shard_spec.hpp"

namespace arch_bench {

namespace {

// identity.profile_id: the applied profile's id, else the --profile-id label.
std::string profile_id_of(const RunOptions& options, const std::optional<Profile>& profile) {
  if (!profile) return options.profile_id.empty() ? "ARCH-CPU-MECHANISM" : options.profile_id;
  if (!options.profile_id.empty() && options.profile_id != profile->id) {
    throw UsageError(fmt::format("--profile-id {} differs from --profile {}: with --profile the report records the "
                                 "profile's own id; drop --profile-id",
                                 options.profile_id, profile->id));
  }
  return profile->id;
}

// Where the identity settings came from, next to the workload settings resolve_settings() traced.
nlohmann::json all_settings_sources(const RunOptions& options, const ResolvedSettings& settings, bool profile) {
  nlohmann::json sources = settings.sources;
  auto source = [&](const char* option) {
    return options.given.contains(option) ? "command_line" : "mode_default";
  };
  sources["semantic_id"] = source("semantic_id");
  sources["workload_id"] = source("workload_id");
  sources["run_label"] = source("run_label");
  sources["profile_id"] = profile ? "profile" : source("profile_id");
  return sources;
}

// The options merged with the mode's defaults and the profile, checked in this order: mode,
// profile, settings, run label, --shard (refused at once, exit 2), backend, timing.
// --model implies --mode landscape and refuses any other (the model's attention is the landscape's
// baseline; the other modes have fixed arms at one shape).
RunOptions with_model_mode(RunOptions options) {
  if (options.model.empty()) {
    if (options.given.contains("memory_gib")) throw UsageError("--memory-gib plans a model's batches; it needs --model");
    return options;
  }
  if (options.given.contains("mode") && options.mode != "landscape") {
    throw UsageError(fmt::format("--model runs --mode landscape (the model's own attention is the baseline, every "
                                 "layer type at its own shape); drop --mode {}",
                                 options.mode));
  }
  options.mode = "landscape";
  return options;
}

RunRequest run_request(const RunOptions& given_options, const std::string& command_line) {
  const RunOptions options = with_model_mode(given_options);
  RunRequest request;
  request.mode = &find_mode_or_throw(options.mode);
  const ModeDefaults defaults = request.mode->defaults();
  if (!options.profile.empty()) request.profile = load_profile(options.profile);
  const Profile* profile = request.profile ? &*request.profile : nullptr;
  request.profile_id = profile_id_of(options, request.profile);
  ResolvedSettings settings = resolve_settings(options, defaults.workload, profile);
  std::shared_ptr<ModelRun> model;
  if (!options.model.empty()) {
    model = attach_model(options.model, options.given, settings.workload);
    request.experiment = fmt::format("{}_{}", defaults.experiment, model->preset.id);
    // The workload's heads and head_dim are the baseline layer type's, from the preset unless typed.
    for (const char* setting : {"heads", "head_dim"}) {
      if (settings.sources.value(setting, "") != "command_line") settings.sources[setting] = "model";
    }
    settings.sources["mode"] = options.given.contains("mode") ? "command_line" : "model";
    // The whole-model figures are decode figures; a model-sized prefill at the landscape's 8192 tokens
    // takes minutes per cell on a small CPU. --phase decode,prefill asks for both.
    if (!options.given.contains("phase")) {
      settings.workload.phases = {Phase::decode};
      settings.sources["phases"] = "model";
    }
  }
  check_run_label(options.run_label);
  if (options.given.contains("shard")) request.shard = parse_shard(options.shard, process_environment());
  // A profile names its backend; without one, --device picks (and may refuse) it.
  request.backend = profile ? BackendChoice{profile->backend, {}}
                            : choose_backend(settings.device, *request.mode, settings.workload);
  if (model) {
    model->memory_bytes = planning_memory_bytes(options.memory_gib, options.given.contains("memory_gib"),
                                                request.backend.name, model->memory_source);
  }
  resolve_timing(options, profile, request.backend.name, settings);
  request.workload = settings.workload;
  request.settings_sources = all_settings_sources(options, settings, profile != nullptr);
  request.semantic_id = options.semantic_id.empty() ? defaults.semantic_id : options.semantic_id;
  request.workload_id = options.workload_id.empty() ? defaults.workload_id : options.workload_id;
  // Two models are two workloads: `diff` refuses to pair their rows unless told.
  if (model && options.workload_id.empty()) request.workload_id += "-" + model->preset.id;
  request.run_label = options.run_label;
  request.command_line = command_line;
  request.output = {options.output, options.given.contains("output"), options.results_dir,
                    options.given.contains("results_dir"), options.overwrite};
  request.dry_run = options.dry_run;
  request.skip_cells_that_do_not_fit = options.skip_cells_that_do_not_fit;
  request.omp_wait_policy = omp_wait_policy_in_effect();
  return request;
}

// Progress on stderr: on a terminal, transient lines overwrite each other; a log file gets only
// lasting lines; --quiet, none.
ProgressSink stderr_progress(bool quiet) {
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  return [quiet, terminal](const std::string& line, bool transient) {
    if (quiet || (transient && !terminal)) return;
    if (terminal) fmt::print(stderr, "\r\033[K{}{}", line, transient ? "" : "\n");
    else fmt::print(stderr, "{}\n", line);
  };
}

// What the run wrote, and its exit code: 0, 1 for a failed cell or preflight, an invalid report or
// one written elsewhere than asked, 128 + signal when interrupted.
int print_outcome(const RunOutcome& outcome) {
  if (!outcome.schema_errors.empty()) {
    fmt::print(stderr, "error: the report does not match schemas/result.schema.json; nothing was written:\n");
    for (const std::string& error : outcome.schema_errors) fmt::print(stderr, "  {}\n", error);
    return 1;
  }
  if (!outcome.measured) {
    print_plan(stdout, outcome.plan);
    if (outcome.report.failure) {  // the profile's preflight failed
      fmt::print(stderr, "error: {}\n", outcome.report.failure->message);
      fmt::print(stderr, "wrote {} (evidence_level dry_run: nothing measured)\n", outcome.written.string());
      return 1;
    }
    fmt::print("wrote {} (evidence_level dry_run)\n", outcome.written.string());
    return 0;
  }
  if (outcome.written != "-") {
    print_run_table(stdout, outcome.report);
    fmt::print("wrote {}\n", outcome.written.string());
  }
  if (outcome.stop_signal != 0) return exit_code_for_signal(outcome.stop_signal);
  return outcome.report.failure || outcome.written != outcome.output ? 1 : 0;
}

int run(const RunOptions& options, const std::string& command_line) {
  const RunRequest request = run_request(options, command_line);
  const ProgressSink progress = stderr_progress(options.quiet);
  PreparedRun prepared = prepare_run(request);
  if (prepared.preflight && !options.quiet) print_preflight(stderr, *request.profile, *prepared.preflight);
  for (const std::string& note : prepared.report.notes) progress("note: " + note, false);
  return print_outcome(finish_run(request, std::move(prepared), progress));
}

}  // namespace

void register_run_command(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand(
      "run", "Measure a mode's baseline and candidates over the workload matrix and write one JSON evidence "
             "report (results/<experiment>_<run_label>.json). `arch-bench --mode ...` without a subcommand "
             "means `run`. --profile ID applies and checks an environment profile (a failed preflight writes a "
             "dry_run and exits 1); --profile-id only labels the report; --dry-run writes the plan only.");
  add_run_options(*command, *options);
  command->footer(
      "Environment: ARCH_BENCH_CPU_ISA=portable|avx2|avx512|avx512_bf16 lowers softmax_kv's hand-written kernel set (avx512_bf16, the bf16 dot products, is the default on AMD only and is entered on any CPU that has it when asked for); "
      "ARCH_BENCH_KERNEL_VARIANT=build|x86-64|x86-64-v3|x86-64-v4 picks the ISA variant of every other CPU "
      "kernel (default: the build's own in a -march=native build, else the best this CPU runs); both are "
      "recorded in the report (hardware.cpu_isa, hardware.cpu_kernel_variant, each row's cpu_kernel_isa). "
      "ARCH_BENCH_PLUGIN_PATH adds plugins. OpenMP workers spin between regions for about a second while a run "
      "measures on an otherwise idle machine, else ~100 us (workload.omp_wait_policy says which and why); "
      "OMP_WAIT_POLICY or GOMP_SPINCOUNT, when set, replaces that choice.");
  command->callback([options, command, &context]() {
    options->given = given_options(*command);
    load_plugins(options->plugins);  // before the mode reads the registry
    context.exit_code = run(*options, quoted_command_line(context.argv));
  });
}

}  // namespace arch_bench
