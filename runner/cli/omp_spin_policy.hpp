#pragma once
// How long arch-bench's OpenMP workers spin between parallel regions before they sleep. libgomp
// reads GOMP_SPINCOUNT once, before main(), so main.cpp chooses here and executes itself again with it.
//
// Every command but a measuring `run` gets the bounded spin (~100 us): a team idle for longer sleeps,
// so it takes no core from other work (under a load of ~5 on 2 cores a conformance case took 26-30 s
// with libgomp's default millisecond spin, 1.4 s passive).
//
// `run` on an otherwise idle machine spins for up to about a second. A worker that slept through a
// cell's preparation was woken for its first split step, and on a VM in a busy spell of the host
// every sample of that visit could then be 150-600 us slower than the step. On the 2-vCPU Zen 4 VM,
// in decode landscapes alternated with runs of the bounded spin (53 slow visits of 2700), none of
// 1836 visits was slow with OMP_WAIT_POLICY=active, nor of 648 with this spin. Spinning takes a
// core from whoever else wants it, so a machine with other runnable work at the start gets the
// bounded spin, and the report says why.
#include <optional>
#include <string>
#include <vector>

namespace arch_bench {

inline constexpr const char* kBoundedSpinCount = "4000";        // ~20-40 ns a spin: 80-160 us
inline constexpr const char* kMeasuringSpinCount = "50000000";  // ~1-2 s

// Where main.cpp leaves the reason for the spin it chose, for the report (omp_wait_policy_in_effect()).
inline constexpr const char* kSpinReasonVariable = "ARCH_BENCH_OMP_SPIN_REASON";

struct SpinChoice {
  std::string spin_count;  // the GOMP_SPINCOUNT to set
  std::string reason;      // one clause for the report
};

// Whether the command line (subcommand first, as main.cpp completes it) runs OpenMP teams at all:
// `run`, `conformance` and `preflight` do; `list`, `validate`, `diff`, `merge`, `report`, `export`
// and --help/--version do not, so they start once instead of executing themselves again for a spin
// no team of theirs would use.
bool runs_openmp_teams(const std::vector<std::string>& words);

// `measuring`: the command is `run` (dry runs included: they time nothing, so the spin is moot).
// `other_runnable`: tasks runnable on the machine besides this process (nullopt: unknown, no /proc).
SpinChoice choose_omp_spin(bool measuring, std::optional<int> other_runnable, int cpus);

// Runnable tasks on the machine besides this one: /proc/stat's procs_running less this process,
// the median of `readings` readings 1 ms apart (one reading catches a daemon's wake-up). nullopt
// without /proc/stat.
std::optional<int> other_runnable_tasks(int readings = 5);

// What a report records as workload.omp_wait_policy: the user's OMP_WAIT_POLICY, or the spin in
// effect with the reason main.cpp left, or "unset".
std::string omp_wait_policy_in_effect();

}  // namespace arch_bench
