#pragma once
// When a CPU kernel's step is worth a parallel region. arch-bench runs its OpenMP team with a
// bounded spin (runner/cli/omp_spin_policy.hpp: idle workers spin ~100 us, then sleep; a measuring
// run on an idle machine spins about a second), so a region entered
// right after another costs about 1 us to fork and join on the 2-core VMs this project runs on,
// and one entered after a pause about 50-100 us (a futex wake; every region pays that under
// OMP_WAIT_POLICY=passive). A decode step of 8 heads x 64 x 64 takes 3-7 us on one thread, so
// splitting it pays when steps come back to back (a benchmark loop, a decode loop) and costs little
// otherwise; below these sizes a step runs on the calling thread. rwkv4, whose state is three
// vectors per head, counts channels instead (kRwkv4ParallelChannels, rwkv4/cpu.cpp).
#include <cstdint>

namespace arch_bench {

// State elements updated per step (a multiply-add or two each: linear attention, RetNet, Gated
// DeltaNet, RWKV, Performer) below which the step stays serial.
inline constexpr std::int64_t kParallelStateElements = std::int64_t{1} << 14;

// Mamba's per-element update also takes an exp (about four multiply-adds of work), so it splits
// at a quarter of that size.
inline constexpr std::int64_t kParallelScanElements = std::int64_t{1} << 12;

}  // namespace arch_bench
