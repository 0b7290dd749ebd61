#pragma once
// What a parallel region costs the CPU kernels under the OpenMP wait policy in effect: a policy
// that puts idle workers to sleep makes every region pay a wake-up (94 us here under
// OMP_WAIT_POLICY=passive, against ~1 us for a team still spinning), which decides whether a
// small decode step is faster split or serial. Reported so a reader can tell.

namespace arch_bench {

// Median wall time, in microseconds, of `samples` empty parallel regions entered back to back
// with `threads` threads (the way a benchmark loop enters a kernel's region). Throws
// std::invalid_argument when samples < 1 or threads < 1.
double measure_omp_fork_join_us(int threads, int samples = 200);

}  // namespace arch_bench
