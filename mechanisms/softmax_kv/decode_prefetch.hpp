#pragma once
// How many K/V rows ahead of its loads the hand-written decode steps (cpu_avx2.cpp, cpu_avx512.cpp)
// ask for a row's cache lines. bf16 rows: one key block (64 rows, 8 KiB at d = 64); without the
// prefetch a cold bf16 step at L = 8192 stayed short of DRAM bandwidth (numbers in cpu_avx512.cpp).
// fp32 rows: 16 (4 KiB at d = 64). A block ahead, fp32's 16 KiB of requests in flight cost the hot
// step 1-13% (issue 16). Measured at 64, 32, 16 and 8 rows ahead on the 2-vCPU Sapphire Rapids VM
// (fp32, 8 x 64, 2 threads; runs of each distance alternated, 3-6 rounds):
// - AVX-512, hot L = 8192: 16 ahead ran at 0.84-1.05 of twice the team's warm memory probe (median
//   run 675 us), 64 ahead at 0.64-0.91 (774 us); 8 ahead 714-810 us, 32 ahead 754-898 us.
// - AVX-512, cold L = 8192: 1513-1565 us at 16 ahead against 1682-1795 us at 64.
// - AVX2 (the same machine, ARCH_BENCH_CPU_ISA=avx2): hot 0.78-1.00 against 0.56-0.84 of the probe,
//   cold 1672-1733 against 1781-1854 us.
#include <cstdint>

#include "mechanisms/common/cpu_isa.hpp"

namespace arch_bench {

template <class T>
inline constexpr std::int64_t kDecodePrefetchRows = sizeof(T) == 4 ? 16 : 64;

// The cache level the prefetches fill, as __builtin_prefetch's locality: 3 (prefetcht0, into L1) or
// 2 (prefetcht1, into L2). Each L1 prefetch holds one of the core's few L1 miss buffers until its line
// arrives, so on Zen 4 a cold step ran at ~8 GB/s per core whatever the distance (0 to 256 rows ahead)
// or the kernel set. Into L2, alternated on the 2-vCPU Zen 4 VM (8 x 64, 2 threads, 4 rounds): cold
// bf16 at L = 8192 554-668 against 1080-1447 us, fp32 1284-1433 against 1717-1980 us; hot steps
// level or faster (fp32 at L = 8192 861-1499 against 1650-2336 us). Intel keeps L1: the distances
// above were tuned for it on Sapphire Rapids, and L2 is unmeasured there.
inline constexpr int kPrefetchIntoL1 = 3, kPrefetchIntoL2 = 2;
inline bool decode_prefetches_into_l2() { return cpu_vendor_is_amd(); }

}  // namespace arch_bench
