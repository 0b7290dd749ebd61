// arch-bench: benchmark and profiling harness for sequence-mixing mechanisms.
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checked_size.hpp"
#include "mechanisms/common/cpu_isa.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "core/backends/cpu/usable_cpus.hpp"
#include "runner/cli/commands.hpp"
#include "runner/cli/omp_spin_policy.hpp"
#include "runner/cli/signals.hpp"
#include "runner/cli/standard_output.hpp"
#include "runner/present/printable_text.hpp"
#include "core/errors.hpp"

namespace {

// OpenMP threads that spin-wait between parallel regions take the cores other work needs, and a
// passive team pays a futex wake on every region: 94 us median to fork and join two threads on this
// project's 2-core VM, against 0.6-1.1 us for a team still spinning, which made every small parallel
// decode step slower than a serial one. So arch-bench bounds the spin, and spins longer only while a
// `run` measures on an otherwise idle machine (runner/cli/omp_spin_policy.hpp). libgomp reads its
// environment once, in its constructor, before main() (an environment changed by .preinit_array is
// reset by libc's own start-up before libgomp's runs), so arch-bench sets GOMP_SPINCOUNT and
// executes itself again, once. A policy (or GOMP_SPINCOUNT) the user set is kept; the report
// records the policy in effect, why, and the fork/join cost measured under it.
void run_with_chosen_omp_spin(char** argv, const std::vector<std::string>& words) {
  using namespace arch_bench;
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (!runs_openmp_teams(words)) return;
  const bool measuring = !words.empty() && words.front() == "run";
  const SpinChoice choice = choose_omp_spin(measuring, measuring ? other_runnable_tasks() : std::nullopt,
                                            static_cast<int>(std::thread::hardware_concurrency()));
  ::setenv("GOMP_SPINCOUNT", choice.spin_count.c_str(), 1);
  ::setenv(kSpinReasonVariable, choice.reason.c_str(), 1);
  // Under OMP_PROC_BIND or OMP_PLACES, libgomp has bound this thread to its first place; the new
  // image would inherit that one place, build its places from it and put the whole team there
  // (a 2-thread team took 10-11 us to fork and join on one vCPU, against 0.6 us on two).
  const cpu_set_t cpus = process_cpus();
  ::sched_setaffinity(0, sizeof(cpus), &cpus);
  ::execv("/proc/self/exe", argv);
  ::unsetenv("GOMP_SPINCOUNT");  // no /proc: libgomp keeps its default, and the report says so
  ::unsetenv(kSpinReasonVariable);
}

// The design card's form `arch-bench --mode linear_recurrence ...` means `arch-bench run ...`.
std::vector<std::string> with_default_subcommand(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  if (!words.empty() && words.front().size() > 1 && words.front()[0] == '-' && words.front() != "-h" &&
      words.front() != "--help" && words.front() != "--version") {
    words.insert(words.begin(), "run");
  }
  return words;
}

// The result a command printed did not all reach standard output: a failure (exit 1) even when the
// command itself succeeded, or a CI job would read an empty export or diff as a pass. A command that
// already failed keeps its own code.
int output_lost(const std::string& reason, int exit_code) {
  fmt::print(stderr, "error: could not write the output to standard output ({}); it is incomplete\n", reason);
  return exit_code == 0 ? 1 : exit_code;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace arch_bench;
  // Before anything else runs: a binary built for another CPU (-march=native on a newer machine)
  // stops here with the reason instead of dying of SIGILL in a kernel.
  if (const std::vector<std::string> missing = build_isa_features_missing_here(); !missing.empty()) {
    fmt::print(stderr,
               "error: this arch-bench was compiled for a CPU with {} ({}), which this CPU lacks: {}. Rebuild it on "
               "this machine, or configure with -DARCH_BENCH_NATIVE=OFF for a binary that runs on any x86-64 "
               "(every kernel then dispatches to the best ISA variant this CPU runs)\n",
               fmt::join(build_isa_features(), ", "), build_isa_name(), fmt::join(missing, ", "));
    return 2;
  }
  try {
    check_kernel_variant_environment();
  } catch (const std::exception& error) {
    fmt::print(stderr, "error: {}\n", error.what());
    return 2;
  }
  run_with_chosen_omp_spin(argv, with_default_subcommand(argc, argv));
  CLI::App app{
      "arch-bench: measures what a sequence-mixing mechanism costs per token (time, state bytes, peak memory) "
      "and how faithful it is, and writes a schema-validated JSON evidence report.\n"
      "Exit codes: 0 success, 1 failure or regression, 2 bad input (nothing written).",
      "arch-bench"};
  app.set_version_flag("--version", "arch-bench 0.1.0");
  app.require_subcommand(1);
  CommandContext context;
  context.argv = with_default_subcommand(argc, argv);
  register_run_command(app, context);
  register_list_command(app, context);
  register_validate_command(app, context);
  register_diff_command(app, context);
  register_preflight_command(app, context);
  register_conformance_command(app, context);
  register_merge_command(app, context);
  register_report_command(app, context);
  register_export_command(app, context);

  std::vector<std::string> reversed(context.argv.rbegin(), context.argv.rend());  // CLI11 wants them reversed
  install_signal_handlers();
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : 2;
  } catch (const UsageError& error) {
    fmt::print(stderr, "error: {}\n", escape_control_bytes(error.what()));
    return 2;
  } catch (const SizeOverflow& error) {
    // The checks up front name the option; this is the backstop for a size computed elsewhere.
    fmt::print(stderr, "error: {}: the sizes given are too large for this machine; nothing was written\n",
               escape_control_bytes(error.what()));
    return 2;
  } catch (const std::exception& error) {
    // fmt::print throws when stdio cannot take more text: that is lost output, not a bug.
    if (const std::optional<std::string> lost = standard_output_failure()) return output_lost(*lost, 1);
    fmt::print(stderr, "internal error: {}\n", escape_control_bytes(error.what()));
    return 3;
  }
  if (const std::optional<std::string> lost = standard_output_failure()) return output_lost(*lost, context.exit_code);
  return context.exit_code;
}
