#pragma once
// How much memory bandwidth the host gives this process right now. On the shared VMs this project
// runs on, the read rate of DRAM drifts by a third within a minute (14 -> 19 GB/s measured over 30 s
// on the 2-vCPU Zen 3 VM, issue 16) as other guests' traffic comes and goes, and a cold-cache,
// memory-bound cell's time follows it: two back-to-back runs of one binary differed by up to 28% on
// softmax_kv decode. A 512 KiB buffer, flushed from every cache and read back by one thread, tracks
// the rate a 16 MiB read gets at the same moment (probe / 16 MiB read stayed at 1.04-1.08 while
// both drifted), in ~30 us. The sampler runs it before every cold CPU sample, so each row says what
// bandwidth it was measured under and `arch-bench diff` can tell a slower kernel from a slower host.
// It runs on the calling thread only: no parallel region of its own next to the timed one.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace arch_bench {

class MemoryProbe {
 public:
  static constexpr std::size_t kBytes = 512 * 1024;
  MemoryProbe();
  // Flushes the probe buffer from every cache (clflush), then times one streaming read of it: GB/s.
  double read_gbps();

 private:
  struct FreeDeleter {
    void operator()(void* p) const noexcept;
  };
  std::unique_ptr<std::uint64_t[], FreeDeleter> words_;
};

}  // namespace arch_bench
