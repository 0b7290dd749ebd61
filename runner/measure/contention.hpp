#pragma once
// Whether the core a CPU sample runs on is shared with other work. On the 2-vCPU VMs this project
// runs on, medians of one binary fell into two modes ~1.5x apart, switching every few hundred
// milliseconds within a run (issue 16). The cause is the host: a dependent FMA chain (bound by FMA
// latency, i.e. by clock frequency) kept its time, while eight independent chains (bound by the
// core's FMA issue bandwidth) took 1.45-1.55x longer in the slow mode: the clock did not change,
// the vCPU's physical core was being shared (an SMT sibling busy with another guest). Nothing in
// the guest can prevent that, so every CPU sample is preceded by this probe and the report says
// how contended each row's core was.
namespace arch_bench {

// Time of 8 independent FMA chains, each step's addends loaded from L1, over time of 1 dependent
// chain of the same number of steps, about 1.3 us each on a 3 GHz core. With two FMA pipes and a
// 4-cycle FMA latency (Zen 3, Skylake and later) both take 4 cycles per step, so an uncontended core
// reads ~1 (Zen 1, whose 8-lane FMAs take two 128-bit halves and whose latency is 5, reads ~1.6); a
// core whose FMA or load issue is shared reads more (1.45-1.55 measured in the slow mode on Sapphire
// Rapids; 2.0-2.8 on Zen 1 while an L1-resident matmul took 1.57x longer).
double host_contention_ratio();

// host_contention_ratio() on every thread of the OpenMP team at once, the largest: a step split over
// the team waits for its slowest thread, so a shared core under any of them slows it. (On the 2-vCPU
// VM the calling thread's core alone read 1.00-1.02 in runs whose split decode steps were 1.5x slower
// and whose FMA ceiling had dropped 15%.) Its parallel region also wakes the team before a sample.
double team_contention_ratio();

}  // namespace arch_bench
