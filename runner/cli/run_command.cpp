// `arch-bench run`: cli -> profile + workload -> plan -> preflight -> ceilings -> measure -> decide
// -> report -> validate -> atomic write -> table. A dry run, or a failed preflight, stops after the
// plan and writes a dry_run report instead.
#include <omp.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "runner/backends/cpu/cpu_backend.hpp"
#include "runner/backends/cpu/host_facts.hpp"
#include "runner/backends/cuda/device_probe.hpp"
#include "runner/cli/commands.hpp"
#include "runner/cli/run_options.hpp"
#include "runner/core/errors.hpp"
#include "runner/core/execute.hpp"
#include "runner/core/plan.hpp"
#include "runner/measure/ceilings.hpp"
#include "runner/measure/timer_overhead.hpp"
#include "runner/preflight/dry_run.hpp"
#include "runner/preflight/preflight.hpp"
#include "runner/preflight/preflight_report.hpp"
#include "runner/profiles/profile.hpp"
#include "runner/profiles/thresholds.hpp"
#include "runner/report/atomic_write.hpp"
#include "runner/report/console_table.hpp"
#include "runner/report/report.hpp"
#include "runner/report/schema_validation.hpp"

namespace arch_bench {

namespace {

struct BackendChoice {
  std::string name;  // "cpu" | "cuda"
  std::vector<std::string> notes;
};

BackendChoice choose_backend(const std::string& device) {
  const CudaProbe cuda = probe_cuda();
  BackendChoice choice{"cpu", {}};
  if (device == "cuda") {
    if (!cuda.usable) {
      throw UsageError(fmt::format("--device cuda: no usable CUDA device ({}); use --device cpu or auto",
                                   cuda.reason));
    }
    throw UsageError("--device cuda: the mechanisms have no CUDA kernels in this build yet; use --device cpu");
  }
  if (device == "auto") {
    choice.notes.push_back(cuda.usable
                               ? "--device auto: a CUDA device is present but the mechanisms have no CUDA "
                                 "kernels yet; measured on the CPU backend"
                               : fmt::format("--device auto: no usable CUDA device ({}); measured on the CPU "
                                             "backend",
                                             cuda.reason));
  }
  return choice;
}

void check_run_label(const std::string& label) {
  if (label.empty() || label.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                                               "._-") != std::string::npos) {
    throw UsageError(fmt::format("--run-label '{}' may use only letters, digits, '.', '_' and '-'", label));
  }
}

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

// A report is validated before it is written; an invalid one is an error, never a file.
int write_report(const nlohmann::json& document, const std::filesystem::path& output, bool overwrite) {
  const std::vector<std::string> errors = schema_errors(document, "result");
  if (!errors.empty()) {
    fmt::print(stderr, "error: the report does not match schemas/result.schema.json; nothing was written:\n");
    for (const std::string& error : errors) fmt::print(stderr, "  {}\n", error);
    return 1;
  }
  write_file_atomically(output, document.dump(2) + "\n", overwrite);
  return 0;
}

// No mechanism evidence: the plan and its predicted bytes, and, when the profile's preflight
// failed, the checks that did.
int write_dry_run(RunReport report, const Plan& plan, const std::optional<PreflightResult>& preflight,
                  const std::optional<Profile>& profile, const std::filesystem::path& output, const RunOptions& options) {
  const std::vector<Check> failed = preflight ? preflight->failed() : std::vector<Check>{};
  report.evidence_level = "dry_run";
  report.host = preflight ? preflight->machine.host : host_facts();
  if (preflight && preflight->machine.cuda.usable) report.gpu = preflight->machine.cuda.devices;
  report.decision = dry_run_decision(plan, report.identity.profile_id, failed);
  if (!failed.empty()) report.failure = preflight_failure(report.identity.profile_id, failed);
  report.process_peak_rss_bytes = process_peak_rss_bytes();

  nlohmann::json document = to_json(report);
  document["plan"] = plan_to_json(plan);
  if (!failed.empty()) document["failure"]["checks"] = failed_checks_json(failed);
  if (profile) document["profile"] = profile_record_json(*profile, *preflight);
  if (const int status = write_report(document, output, options.overwrite); status != 0) {
    return status;
  }
  print_plan(stdout, plan);
  if (!failed.empty()) {
    fmt::print(stderr, "error: {}\n", report.failure->message);
    fmt::print(stderr, "wrote {} (evidence_level dry_run: nothing measured)\n", output.string());
    return 1;
  }
  fmt::print("wrote {} (evidence_level dry_run)\n", output.string());
  return 0;
}

int run(const RunOptions& options, const std::string& command_line) {
  const Mode& mode = find_mode_or_throw(options.mode);
  const ModeDefaults defaults = mode.defaults();
  std::optional<Profile> profile;
  if (!options.profile.empty()) profile = load_profile(options.profile);
  const std::string profile_id = profile_id_of(options, profile);
  const ResolvedSettings settings = resolve_settings(options, defaults.workload, profile ? &*profile : nullptr);
  const Workload& workload = settings.workload;
  check_run_label(options.run_label);

  // A profile names its backend; without one, --device picks (and may refuse) it.
  BackendChoice backend_choice{profile ? profile->backend : "cpu", {}};
  if (!profile) backend_choice = choose_backend(settings.device);
  omp_set_num_threads(workload.threads);
  std::optional<PreflightResult> preflight;
  if (profile) preflight = run_preflight(*profile, mode, workload, read_machine_facts());
  const Plan plan = preflight ? preflight->plan : build_plan(mode, workload, backend_choice.name);

  const std::filesystem::path output =
      options.output.empty()
          ? std::filesystem::path(options.results_dir) / fmt::format("{}_{}.json", defaults.experiment, options.run_label)
          : std::filesystem::path(options.output);
  check_output_path(output, options.overwrite, "choose another --run-label (or --output), or pass --overwrite");

  RunReport report;
  report.identity = {options.semantic_id.empty() ? defaults.semantic_id : options.semantic_id,
                     options.workload_id.empty() ? defaults.workload_id : options.workload_id,
                     options.run_label,
                     profile_id,
                     mode.id(),
                     utc_timestamp_now(),
                     command_line,
                     workload.seed};
  report.workload = workload;
  report.backend = backend_choice.name;
  report.notes = backend_choice.notes;
  if (!profile && report.identity.profile_id.find("CUDA") != std::string::npos && report.backend == "cpu") {
    report.notes.push_back(fmt::format("profile {} is recorded as asked (--profile-id is a label), but this run "
                                       "measured on the CPU backend; its evidence level is cpu_measured, not "
                                       "gpu_measured",
                                       report.identity.profile_id));
  }
  report.arms = mode.arms(workload);
  report.settings_sources = all_settings_sources(options, settings, profile.has_value());

  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  auto progress = [&](const std::string& line, bool transient = false) {
    if (options.quiet || (transient && !terminal)) return;
    // On a terminal, transient lines overwrite each other; a log file gets only lasting lines.
    if (terminal) fmt::print(stderr, "\r\033[K{}{}", line, transient ? "" : "\n");
    else fmt::print(stderr, "{}\n", line);
  };
  if (preflight && !options.quiet) print_preflight(stderr, *profile, *preflight);
  for (const std::string& note : report.notes) progress("note: " + note);
  if (preflight) {  // printed above with the other checks; the report keeps them as notes
    for (const Check& check : preflight->checks) {
      if (check.status == CheckStatus::warn) report.notes.push_back(fmt::format("preflight {}: {}", check.id, check.message));
    }
  }
  if (options.dry_run || (preflight && !preflight->passed())) {
    return write_dry_run(std::move(report), plan, preflight, profile, output, options);
  }
  if (report.backend != "cpu") {
    throw UsageError(fmt::format("profile {} passed preflight but this build has no {} backend to measure with; use "
                                 "--profile ARCH-CPU-MECHANISM",
                                 report.identity.profile_id, report.backend));
  }

  progress(fmt::format("arch-bench run --mode {}: {} cells, {} thread(s), {} cache, writing {}", mode.id(),
                       plan.cells.size(), workload.threads, cache_state_name(workload.cache_state),
                       output.string()));

  CpuBackend backend;
  progress("measuring machine ceilings (memory bandwidth, FMA throughput) ...");
  const Ceilings ceilings = measure_ceilings(workload.threads);
  progress(fmt::format("ceilings: read {:.1f} GB/s, triad {:.1f} GB/s, {:.1f} GFLOP/s", ceilings.memory_read_gbps,
                       ceilings.memory_triad_gbps, ceilings.peak_gflops));
  report.ceilings = ceilings;
  report.timer_overhead_ms = measure_timer_overhead_ms(backend);
  report.host = backend.facts();

  report.rows = execute_plan(plan, workload, backend, ceilings, progress);
  report.decision = mode.decide(report.rows, workload);
  for (const Row& row : report.rows) {
    if (row.status == RowStatus::failed && !report.failure) {
      report.failure = Failure{"mechanism_error", row.reason, row.cell};
    }
  }
  if (profile) {
    for (const std::string& note : noisy_row_notes(report.rows, profile->thresholds.max_rel_stdev)) {
      report.notes.push_back(note);
    }
  }
  report.process_peak_rss_bytes = process_peak_rss_bytes();

  nlohmann::json document = to_json(report);
  if (profile) document["profile"] = profile_record_json(*profile, *preflight);
  if (const int status = write_report(document, output, options.overwrite); status != 0) {
    return status;
  }
  print_run_table(stdout, report);
  fmt::print("wrote {}\n", output.string());
  return report.failure ? 1 : 0;
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
  command->callback([options, command, &context]() {
    options->given = given_options(*command);
    context.exit_code = run(*options, quoted_command_line(context.argv));
  });
}

}  // namespace arch_bench
