// `arch-bench run`: cli -> profile + workload -> plan -> preflight -> ceilings -> measure -> decide
// -> report -> validate -> atomic write -> table. A dry run, or a failed preflight, stops after the
// plan and writes a dry_run report instead.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "core/backends/cpu/host_facts.hpp"
#include "core/backends/cpu/usable_cpus.hpp"
#include "core/backends/cuda/cuda_entry.hpp"
#include "core/backends/cuda/device_probe.hpp"
#include "mechanisms/common/cpu_isa.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/registry.hpp"
#include "runner/cli/commands.hpp"
#include "runner/cli/omp_spin_policy.hpp"
#include "runner/cli/run_options.hpp"
#include "runner/cli/signals.hpp"
#include "runner/plugins/load_plugin.hpp"
#include "runner/plugins/plugin_report.hpp"
#include "runner/pipeline/interrupt.hpp"
#include "core/errors.hpp"
#include "runner/pipeline/execute.hpp"
#include "runner/pipeline/plan.hpp"
#include "runner/measure/ceilings.hpp"
#include "runner/measure/fork_join.hpp"
#include "runner/measure/timer_overhead.hpp"
#include "runner/preflight/dry_run.hpp"
#include "runner/preflight/machine_facts.hpp"
#include "runner/preflight/preflight.hpp"
#include "runner/preflight/preflight_report.hpp"
#include "runner/profiles/profile.hpp"
#include "runner/profiles/thresholds.hpp"
#include "runner/report/atomic_write.hpp"
#include "runner/report/output_path.hpp"
#include "runner/report/console_table.hpp"
#include "runner/report/report.hpp"
#include "runner/report/schema_validation.hpp"
#include "runner/report/team_trial_note.hpp"
#include "runner/shard/shard.hpp"

namespace arch_bench {

namespace {

struct BackendChoice {
  std::string name;  // "cpu" | "cuda"
  std::vector<std::string> notes;
};

// The mode's mechanisms that have no kernels on `backend` in this build (empty: the mode runs there).
std::vector<std::string> mechanisms_without(const Mode& mode, const Workload& workload, const std::string& backend) {
  std::vector<std::string> missing;
  for (const Arm& arm : mode.arms(workload)) {
    const Mechanism* mechanism = find_mechanism(arm.mechanism);
    const bool has = mechanism != nullptr && std::ranges::find(mechanism->info().backends, backend) !=
                                                 mechanism->info().backends.end();
    if (!has && std::ranges::find(missing, arm.mechanism) == missing.end()) missing.push_back(arm.mechanism);
  }
  return missing;
}

bool mode_runs_on(const Mode& mode, const Workload& workload, const std::string& backend) {
  return mechanisms_without(mode, workload, backend).empty();
}

// --device cuda needs a usable device (else exit 2 with the probe's reason, nothing written);
// --device auto takes the GPU when one is usable and every mechanism of the mode has CUDA kernels.
BackendChoice choose_backend(const std::string& device, const Mode& mode, const Workload& workload) {
  if (device == "cpu") return {"cpu", {}};
  const CudaProbe cuda = probe_cuda();
  if (device == "cuda") {
    if (!cuda.usable) {
      throw UsageError(fmt::format("--device cuda: no usable CUDA device ({}); use --device cpu or auto",
                                   cuda.reason));
    }
    if (!mode_runs_on(mode, workload, "cuda")) {
      throw UsageError(fmt::format("--device cuda: mode {} needs {} which have no CUDA kernels in this build; use "
                                   "--device cpu",
                                   mode.id(), fmt::join(mechanisms_without(mode, workload, "cuda"), ", ")));
    }
    return {"cuda", {}};
  }
  if (!cuda.usable) {
    return {"cpu", {fmt::format("--device auto: no usable CUDA device ({}); measured on the CPU backend", cuda.reason)}};
  }
  if (!mode_runs_on(mode, workload, "cuda")) {
    return {"cpu", {fmt::format("--device auto: a CUDA device is usable but {} of mode {} have no CUDA kernels; "
                                "measured on the CPU backend",
                                fmt::join(mechanisms_without(mode, workload, "cuda"), ", "), mode.id())}};
  }
  return {"cuda", {fmt::format("--device auto: measured on CUDA device 0 ({})",
                               cuda.devices.empty() ? std::string("?") : cuda.devices[0].value("name", std::string("?")))}};
}

// The label names the result file (<experiment>_<label>.json, within a file system's 255-character
// names, the temporary name included) and is recorded in identity.run_label.
constexpr std::size_t kMaxRunLabel = 200;

void check_run_label(const std::string& label) {
  if (label.empty() || label.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                                               "._-") != std::string::npos) {
    throw UsageError(fmt::format("--run-label '{}' may use only letters, digits, '.', '_' and '-'",
                                 label.size() > 80 ? label.substr(0, 60) + "..." : label));
  }
  if (label.size() > kMaxRunLabel) {
    throw UsageError(fmt::format("--run-label is {} characters; at most {} (it names the result file)", label.size(),
                                 kMaxRunLabel));
  }
}

// The report's path, checked in full before anything is measured (output_path.hpp).
std::filesystem::path checked_output(const RunOptions& options, const std::string& experiment) {
  // Given as '', these would otherwise read as not given at all.
  if (options.given.contains("output") && options.output.empty()) {
    throw UsageError("--output is empty; give a file name (or leave --output out for the default path)");
  }
  if (options.given.contains("results_dir") && options.results_dir.empty()) {
    throw UsageError("--results-dir is empty; give a folder (or leave it out for results/)");
  }
  const bool explicit_output = !options.output.empty();
  const std::filesystem::path output =
      explicit_output ? std::filesystem::path(options.output)
                      : std::filesystem::path(options.results_dir) / fmt::format("{}_{}.json", experiment, options.run_label);
  check_output_file(output, explicit_output ? "--output" : "--results-dir/--run-label", options.overwrite,
                    "choose another --run-label (or --output), or pass --overwrite");
  return output;
}

// Up front, for every measuring run: the largest cell must fit in the memory available now (the
// profile's preflight adds its margin on top), and the report in the free space of its folder.
// Refused with exit 2 rather than found out after the ceilings were measured, one bad_alloc per row.
void check_resources(const Plan& plan, const Workload& workload, const std::string& backend,
                     const std::filesystem::path& output) {
  const std::optional<std::int64_t> available = mem_available_bytes();
  if (backend == "cpu" && available) {
    for (const PlannedCell& planned : plan.cells) {
      if (planned.predicted_peak_bytes <= *available) continue;
      throw UsageError(fmt::format("{} {} L={}{}: its predicted peak is {}, but this machine has {} available "
                                   "(MemAvailable); reduce --sequence-lengths, --batch, --query-heads or --head-dim "
                                   "(--dry-run writes the plan with every cell's predicted bytes)",
                                   planned.cell.mechanism, phase_name(planned.cell.phase),
                                   planned.cell.sequence_length,
                                   planned.arm.variant.empty() ? "" : " [" + planned.arm.variant + "]",
                                   bytes_text(planned.predicted_peak_bytes), bytes_text(*available)));
    }
  }
  if (backend == "cuda") {
    // Device memory: the GPU the CUDA backend will use (device 0), free now.
    const CudaProbe cuda = probe_cuda();
    const nlohmann::json free_bytes =
        cuda.devices.empty() ? nlohmann::json(nullptr) : cuda.devices[0].value("free_memory_bytes", nlohmann::json(nullptr));
    if (free_bytes.is_number_integer()) {
      for (const PlannedCell& planned : plan.cells) {
        if (planned.predicted_peak_bytes <= free_bytes.get<std::int64_t>()) continue;
        throw UsageError(fmt::format("{} {} L={}{}: its predicted peak is {} of device memory, but GPU 0 has {} free; "
                                     "reduce --sequence-lengths, --batch, --query-heads or --head-dim (--dry-run writes "
                                     "the plan with every cell's predicted bytes)",
                                     planned.cell.mechanism, phase_name(planned.cell.phase),
                                     planned.cell.sequence_length,
                                     planned.arm.variant.empty() ? "" : " [" + planned.arm.variant + "]",
                                     bytes_text(planned.predicted_peak_bytes), bytes_text(free_bytes.get<std::int64_t>())));
      }
    }
  }
  // Each row keeps every sample (about 48 bytes each as indented JSON) next to ~4 KiB of fields.
  const auto cells = static_cast<std::int64_t>(plan.cells.size());
  const std::int64_t report_bytes =
      64 * 1024 + cells * (4096 + std::min<std::int64_t>(workload.repeats, std::int64_t{1} << 40) * 48);
  check_free_space(output.parent_path(), "output folder", report_bytes, "the report");
}

// An interrupted run keeps the rows measured before the signal; nothing is decided from them.
void mark_interrupted(RunReport& report, const Plan& plan, int signal_number) {
  const char* name = signal_number == SIGINT ? "SIGINT" : signal_number == SIGTERM ? "SIGTERM" : "a signal";
  std::optional<Cell> cell;
  for (const Row& row : report.rows) {
    if (row.failure_kind == "interrupted") cell = row.cell;
  }
  const std::string message = fmt::format("interrupted by {} after {} of {} cells; the rows measured so far are kept "
                                          "and the cells not measured are absent",
                                          name, report.rows.size(), plan.cells.size());
  report.failure = Failure{"interrupted", message, cell};
  report.decision.verdict = "inconclusive";
  report.decision.crossover_length.reset();
  report.decision.reasons.insert(report.decision.reasons.begin(), message);
  report.decision.next_action = "re-run the whole plan: an interrupted run decides nothing";
}

// After measuring, a failed write (a full disk, a folder removed, the name taken meanwhile) must
// not lose the measurement: the report goes to a fallback file that is named ($TMPDIR, /tmp, the
// working folder), or to stdout. Returns where it went ("-" for stdout).
std::filesystem::path write_with_fallback(const std::string& text, const std::filesystem::path& output,
                                          bool overwrite) {
  try {
    write_file_atomically(output, text, overwrite, "choose another --run-label or --output (or pass --overwrite)");
    return output;
  } catch (const UsageError& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  }
  std::vector<std::filesystem::path> folders;
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir != nullptr && *tmpdir != '\0') folders.emplace_back(tmpdir);
  folders.emplace_back("/tmp");
  folders.emplace_back(".");
  const std::string stem = output.stem().string(), extension = output.extension().string();
  for (const std::filesystem::path& folder : folders) {
    std::error_code ignored;
    for (int attempt = 0; attempt < 100; ++attempt) {
      const std::filesystem::path candidate =
          folder / (attempt == 0 ? stem + extension : fmt::format("{}.{}{}", stem, attempt, extension));
      if (std::filesystem::exists(candidate, ignored)) continue;
      try {
        write_file_atomically(candidate, text, false);
        fmt::print(stderr, "error: the measurement is kept in {} instead of {}; move it there\n", candidate.string(),
                   output.string());
        return candidate;
      } catch (const UsageError&) {
      }
      break;  // that folder cannot be written: try the next one
    }
  }
  fmt::print(stderr, "error: no fallback file could be written either; the report follows on stdout\n");
  fmt::print(stdout, "{}", text);
  std::fflush(stdout);
  return "-";
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
  write_file_atomically(output, document.dump(2) + "\n", overwrite,
                        "choose another --run-label or --output (or pass --overwrite)");
  return 0;
}

// No mechanism evidence: the plan and its predicted bytes, and, when the profile's preflight
// failed, the checks that did.
int write_dry_run(RunReport report, const Plan& plan, const std::optional<PreflightResult>& preflight,
                  const std::optional<Profile>& profile, const std::filesystem::path& output, const RunOptions& options,
                  const nlohmann::json& shard_block) {
  const std::vector<Check> failed = preflight ? preflight->failed() : std::vector<Check>{};
  report.evidence_level = "dry_run";
  report.host = preflight ? preflight->machine.host : host_facts();
  if (preflight && preflight->machine.cuda.usable) report.gpu = preflight->machine.cuda.devices;
  report.decision = dry_run_decision(plan, report.identity.profile_id, failed);
  if (!failed.empty()) report.failure = preflight_failure(report.identity.profile_id, failed);
  report.process_peak_rss_bytes = process_peak_rss_bytes();

  nlohmann::json document = to_json(report);
  document["workload"]["omp_wait_policy"] = omp_wait_policy_in_effect();
  document["plan"] = plan_to_json(plan);
  if (shard_block.is_object()) document["shard"] = shard_block;
  if (!failed.empty()) document["failure"]["checks"] = failed_checks_json(failed);
  if (profile) document["profile"] = profile_record_json(*profile, *preflight);
  annotate_plugin_mechanisms(document);
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

// One reading of the CPU ceilings for the progress lines.
std::string cpu_ceilings_text(const Ceilings& c) {
  return fmt::format("read {:.1f} GB/s, triad {:.1f} GB/s, {:.1f} GFLOP/s", c.memory_read_gbps, c.memory_triad_gbps,
                     c.peak_gflops);
}

int run(const RunOptions& options, const std::string& command_line) {
  const Mode& mode = find_mode_or_throw(options.mode);
  const ModeDefaults defaults = mode.defaults();
  std::optional<Profile> profile;
  if (!options.profile.empty()) profile = load_profile(options.profile);
  const std::string profile_id = profile_id_of(options, profile);
  ResolvedSettings settings = resolve_settings(options, defaults.workload, profile ? &*profile : nullptr);
  const Workload& workload = settings.workload;
  check_run_label(options.run_label);
  // Parsed before anything is checked or measured: a bad --shard is refused at once (exit 2).
  std::optional<ShardSpec> shard_spec;
  if (options.given.contains("shard")) shard_spec = parse_shard(options.shard, process_environment());

  // A profile names its backend; without one, --device picks (and may refuse) it.
  BackendChoice backend_choice{profile ? profile->backend : "cpu", {}};
  if (!profile) backend_choice = choose_backend(settings.device, mode, settings.workload);
  resolve_timing(options, profile ? &*profile : nullptr, backend_choice.name, settings);
  omp_set_num_threads(workload.threads);
  std::optional<PreflightResult> preflight;
  if (profile) preflight = run_preflight(*profile, mode, workload, read_machine_facts());
  const Plan full_plan = preflight ? preflight->plan : build_plan(mode, workload, backend_choice.name);
  // --shard: this process measures its part of the plan only (runner/shard/shard.hpp).
  std::optional<ShardSelection> shard;
  if (shard_spec) shard = select_shard(*shard_spec, full_plan, mode.id(), backend_choice.name, workload);
  const Plan& plan = shard ? shard->plan : full_plan;
  const nlohmann::json shard_block = shard ? shard_json(*shard, process_environment()) : nlohmann::json(nullptr);

  const std::filesystem::path output = checked_output(options, defaults.experiment);
  if (!options.dry_run && (!preflight || preflight->passed())) check_resources(plan, workload, backend_choice.name, output);

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
  if (const int cpus = usable_cpus(); report.backend == "cpu" && workload.threads > cpus) {
    report.notes.push_back(fmt::format("--threads {} is more than the {} CPU(s) this process may run on: the threads "
                                       "take turns on the CPUs and a step split over them waits for each turn, so "
                                       "its times measure the scheduler as much as the kernels",
                                       workload.threads, cpus));
  }
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
    return write_dry_run(std::move(report), plan, preflight, profile, output, options, shard_block);
  }

  // From here until the rows are back, a first SIGINT/SIGTERM stops the measuring loop (signals.hpp).
  std::optional<GracefulInterrupt> graceful_interrupt;
  graceful_interrupt.emplace();
  progress(fmt::format("arch-bench run --mode {}: {} cells, {} thread(s), {} cache, writing {}", mode.id(),
                       plan.cells.size(), workload.threads, cache_state_name(workload.cache_state),
                       output.string()));
  if (shard) {
    progress(fmt::format("shard {} of {}: {} of the plan's {} cells (plan {})", shard->spec.index, shard->spec.count,
                         plan.cells.size(), shard->plan_cells, shard->plan_hash));
  }

  const bool gpu = report.backend == "cuda";
  std::unique_ptr<Backend> backend;
  if (gpu) backend = make_cuda_backend(0);
  else backend = std::make_unique<CpuBackend>();
  progress(gpu ? std::string("measuring GPU ceilings (device copy bandwidth, cuBLAS bf16 GEMM) ...")
               : std::string("measuring machine ceilings (memory bandwidth, FMA throughput) ..."));
  const Ceilings ceilings = gpu ? measure_cuda_ceilings(*backend) : measure_ceilings(workload.threads);
  if (gpu) {
    progress(fmt::format("ceilings: device copy {:.1f} GB/s, bf16 GEMM {:.1f} TFLOP/s", ceilings.memory_read_gbps,
                         ceilings.peak_gflops / 1e3));
  } else {
    progress("ceilings: " + cpu_ceilings_text(ceilings));
  }
  report.ceilings = ceilings;
  report.timer_overhead_ms = measure_timer_overhead_ms(*backend);
  if (!gpu) {
    report.omp_fork_join_us = measure_omp_fork_join_us(workload.threads);
    report.cpu_isa = cpu_isa_name(cpu_isa());
    report.cpu_kernel_variant = kernel_variant_name(dispatched_kernel_variant());
  }
  report.host = backend->facts();
  if (gpu) {
    report.gpu = cuda_device_facts(*backend);
    report.evidence_level = "gpu_measured";
  }

  const auto cells_start = std::chrono::steady_clock::now();
  report.rows = execute_plan(plan, workload, *backend, ceilings, progress);
  graceful_interrupt.reset();
  const int stop_signal = interrupt_signal();
  const double cells_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - cells_start).count();
  if (wants_second_ceiling_reading(gpu, stop_signal != 0, cells_seconds)) {
    progress("measuring machine ceilings again, after the cells ...");
    const Ceilings after = measure_ceilings(workload.threads);
    report.ceilings = with_second_reading(ceilings, after);
    for (Row& row : report.rows) attach_rates(row, *report.ceilings);
    progress("ceilings after the cells: " + cpu_ceilings_text(after) +
             "; the rows use the better of the two readings of each");
  }
  report.decision = mode.decide(report.rows, workload);
  if (shard) mark_partial_decision(report.decision, *shard);
  for (const Row& row : report.rows) {
    if (row.status == RowStatus::failed && !report.failure) {
      report.failure = Failure{row.failure_kind.empty() ? "mechanism_error" : row.failure_kind, row.reason, row.cell};
    }
  }
  if (const std::optional<std::string> note = team_trial_note(report.rows)) report.notes.push_back(*note);
  if (profile) {
    for (const std::string& note : noisy_row_notes(report.rows, profile->thresholds.max_rel_stdev)) {
      report.notes.push_back(note);
    }
  }
  if (stop_signal != 0) mark_interrupted(report, plan, stop_signal);
  report.process_peak_rss_bytes = process_peak_rss_bytes();

  nlohmann::json document = to_json(report);
  document["workload"]["omp_wait_policy"] = omp_wait_policy_in_effect();
  if (profile) document["profile"] = profile_record_json(*profile, *preflight);
  if (shard) document["shard"] = shard_block;
  const nlohmann::json extras = mode.report_extras(report.rows, workload);
  if (extras.is_object()) document.update(extras);
  annotate_plugin_mechanisms(document);
  const std::vector<std::string> errors = schema_errors(document, "result");
  if (!errors.empty()) {
    fmt::print(stderr, "error: the report does not match schemas/result.schema.json; nothing was written:\n");
    for (const std::string& error : errors) fmt::print(stderr, "  {}\n", error);
    return 1;
  }
  const std::filesystem::path written = write_with_fallback(document.dump(2) + "\n", output, options.overwrite);
  if (written != "-") {
    print_run_table(stdout, report);
    fmt::print("wrote {}\n", written.string());
  }
  if (stop_signal != 0) return exit_code_for_signal(stop_signal);
  return report.failure || written != output ? 1 : 0;
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
