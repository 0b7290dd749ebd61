#pragma once
// How much memory bandwidth the host gives this process right now. On the shared VMs this project
// runs on, the read rate of DRAM drifts by a third within a minute (14 -> 19 GB/s measured over 30 s
// on the 2-vCPU Zen 3 VM, issue 16) as other guests' traffic comes and goes, and a cold-cache,
// memory-bound cell's time follows it: two back-to-back runs of one binary differed by up to 28% on
// softmax_kv decode. A 512 KiB buffer, flushed from every cache and read back by one thread, tracks
// the rate a 16 MiB read gets at the same moment (probe / 16 MiB read stayed at 1.04-1.08 while
// both drifted), in ~30 us. The sampler runs it before every cold CPU sample, on every thread of the
// team at once (a sample's threads share the memory, and any one of their vCPUs may be the slow
// one), so each row says what bandwidth it was measured under and `arch-bench diff` can tell a
// slower kernel from a slower host.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace arch_bench {

class MemoryProbe {
 public:
  static constexpr std::size_t kBytesPerThread = 512 * 1024;
  explicit MemoryProbe(int threads);
  // Each of the `threads` OpenMP threads flushes its own 512 KiB (clflush), then all read theirs
  // at once: GB/s = all the bytes / the slowest thread's read time.
  double read_gbps();

 private:
  struct FreeDeleter {
    void operator()(void* p) const noexcept;
  };
  int threads_;
  std::unique_ptr<std::uint64_t[], FreeDeleter> words_;
};

}  // namespace arch_bench
