#pragma once
// Whether the OpenMP team answered at once right after a CPU sample. A decode step split over the
// team waits for its slowest thread; on a shared host a vCPU can be taken away for milliseconds
// (KVM's pause-loop exiting makes a spinning vCPU yield its core, and the host may take a while to
// give it back), and then a 5-20 us step takes 150-600 us, sample after sample. The contention probe
// (contention.hpp) runs on the calling thread's core and cannot see that. This check can: the team
// was busy a moment ago, so its workers are still spinning and enter an empty region within ~1 us;
// a worker whose vCPU is not running enters it only when the host gives the vCPU back.
#include <cstdint>
#include <optional>
#include <vector>

namespace arch_bench {

// Microseconds for every thread of the team to enter and leave an empty parallel region, timed on
// the calling thread; nullopt for a team of one (nothing to wait for).
std::optional<double> team_check_us();

// A check slower than this says a worker did not answer because its vCPU was not running. A
// spinning team answers in ~1 us; a sleeping one (a sample with no parallel region, or a passive
// OMP_WAIT_POLICY) pays a futex wake, ~100 us on the idle 2-vCPU VM; a worker whose vCPU was taken
// away answered after 50 us to milliseconds in the spells seen there, and after ~250 us (median)
// with a busy loop pinned to its CPU. An absolute bound, not one relative to the row's own checks:
// a row stalled throughout would otherwise count nothing.
inline constexpr double kTeamStallUs = 250.0;

// How many of a row's checks (one after each sample) said the team did not answer.
std::int64_t count_team_stalls(const std::vector<double>& checks_us);

}  // namespace arch_bench
