// `arch-bench run`: cli -> workload -> plan -> ceilings -> measure -> decide -> report -> validate
// -> atomic write -> table.
#include <omp.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "runner/backends/cpu/cpu_backend.hpp"
#include "runner/backends/cpu/host_facts.hpp"
#include "runner/backends/cuda/device_probe.hpp"
#include "runner/cli/commands.hpp"
#include "runner/cli/parse_lists.hpp"
#include "runner/cli/run_options.hpp"
#include "runner/core/errors.hpp"
#include "runner/core/execute.hpp"
#include "runner/core/plan.hpp"
#include "runner/measure/ceilings.hpp"
#include "runner/measure/timer_overhead.hpp"
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

BackendChoice choose_backend(const RunOptions& options) {
  const CudaProbe cuda = probe_cuda();
  BackendChoice choice{"cpu", {}};
  if (options.device == "cuda") {
    if (!cuda.usable) {
      throw UsageError(fmt::format("--device cuda: no usable CUDA device ({}); use --device cpu or auto",
                                   cuda.reason));
    }
    throw UsageError("--device cuda: the mechanisms have no CUDA kernels in this build yet; use --device cpu");
  }
  if (options.device == "auto") {
    choice.notes.push_back(cuda.usable
                               ? "--device auto: a CUDA device is present but the mechanisms have no CUDA "
                                 "kernels yet; measured on the CPU backend"
                               : fmt::format("--device auto: no usable CUDA device ({}); measured on the CPU "
                                             "backend",
                                             cuda.reason));
  }
  return choice;
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                                              "-_./=:,+") == std::string::npos) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

void check_run_label(const std::string& label) {
  if (label.empty() || label.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                                               "._-") != std::string::npos) {
    throw UsageError(fmt::format("--run-label '{}' may use only letters, digits, '.', '_' and '-'", label));
  }
}

int run(const RunOptions& options, const std::string& command_line) {
  const Mode* mode = find_mode(options.mode);
  if (mode == nullptr) {
    std::string known;
    for (const auto& m : all_modes()) known += (known.empty() ? "" : ", ") + m->id();
    throw UsageError(fmt::format("--mode: unknown mode '{}' (known: {})", options.mode, known));
  }
  const ModeDefaults defaults = mode->defaults();
  Workload workload = workload_from_options(options, defaults.workload);
  check_run_label(options.run_label);
  const BackendChoice backend_choice = choose_backend(options);
  omp_set_num_threads(workload.threads);
  const Plan plan = build_plan(*mode, workload, backend_choice.name);

  const std::filesystem::path output =
      options.output.empty()
          ? std::filesystem::path(options.results_dir) / fmt::format("{}_{}.json", defaults.experiment, options.run_label)
          : std::filesystem::path(options.output);
  check_output_path(output, options.overwrite, "choose another --run-label (or --output), or pass --overwrite");

  RunReport report;
  report.identity = {options.semantic_id.empty() ? defaults.semantic_id : options.semantic_id,
                     options.workload_id.empty() ? defaults.workload_id : options.workload_id,
                     options.run_label,
                     options.profile_id.empty() ? "ARCH-CPU-MECHANISM" : options.profile_id,
                     mode->id(),
                     utc_timestamp_now(),
                     command_line,
                     workload.seed};
  report.workload = workload;
  report.backend = backend_choice.name;
  report.notes = backend_choice.notes;
  if (report.identity.profile_id.find("CUDA") != std::string::npos && report.backend == "cpu") {
    report.notes.push_back(fmt::format("profile {} is recorded as asked, but this run measured on the CPU backend; "
                                       "its evidence level is cpu_measured, not gpu_measured",
                                       report.identity.profile_id));
  }
  report.arms = mode->arms(workload);
  report.settings_sources = options.sources;

  auto progress = [&](const std::string& line) {
    if (!options.quiet) fmt::print(stderr, "{}\n", line);
  };
  for (const std::string& note : report.notes) progress("note: " + note);
  progress(fmt::format("arch-bench run --mode {}: {} cells, {} thread(s), {} cache, writing {}", mode->id(),
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
  report.decision = mode->decide(report.rows, workload);
  for (const Row& row : report.rows) {
    if (row.status == RowStatus::failed && !report.failure) {
      report.failure = Failure{"mechanism_error", row.reason, row.cell};
    }
  }
  report.process_peak_rss_bytes = process_peak_rss_bytes();

  const nlohmann::json document = to_json(report);
  const std::vector<std::string> errors = schema_errors(document, "result");
  if (!errors.empty()) {
    fmt::print(stderr, "error: the report does not match schemas/result.schema.json; nothing was written:\n");
    for (const std::string& error : errors) fmt::print(stderr, "  {}\n", error);
    return 1;
  }
  write_file_atomically(output, document.dump(2) + "\n", options.overwrite);
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
             "means `run`.");
  add_run_options(*command, *options);
  command->callback([options, command, &context]() {
    std::string command_line = "arch-bench";
    for (const std::string& word : context.argv) command_line += " " + shell_quote(word);
    options->sources = settings_sources(*command);
    context.exit_code = run(*options, command_line);
  });
}

}  // namespace arch_bench
