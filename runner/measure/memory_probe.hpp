#pragma once
// How much memory bandwidth the host gives this process right now. On the shared VMs this project
// runs on, the read rate of DRAM drifts by a third within a minute (14 -> 19 GB/s measured over 30 s
// on the 2-vCPU Zen 3 VM, issue 16) as other guests' traffic comes and goes, and a memory-bound
// cell's time follows it: two back-to-back runs of one binary differed by up to 28% on softmax_kv
// decode. The sampler reads a probe buffer before every sample of such a cell, so each row says what
// bandwidth it was measured under and `arch-bench diff` can tell a slower kernel from a slower host.
//
// Two readings, one per cache state of the cell, each taken by every thread of the team at once on
// its own buffer (TeamMemoryProbe), the slowest thread's rate kept: a split step ends with its
// slowest thread, and in the hot decode's slow mode (results/shared-host-probes.md, "The slow mode of hot decode") one
// thread's memory comes at half the rate while the other's does not.
// - flushed (cold cells): a 512 KiB buffer, flushed from every cache and read back, tracks the rate a
//   16 MiB read gets at the same moment (on one thread: probe / 16 MiB read stayed at 1.04-1.08
//   while both drifted), in ~30 us.
// - warm (hot cells whose buffers are larger than the team's private caches, so that each step
//   streams them from the shared cache or DRAM): a buffer twice one core's private cache, read as it
//   lies. It cannot stay in a core's private cache, so it measures what the shared levels give each
//   core now. Over 160 s of alternating it (on one thread) with a hot softmax_kv decode step (bf16,
//   L = 8192, 16 MiB, 2 threads) on the 2-vCPU Sapphire Rapids VM, 2-second medians of the step
//   moved between 300 and 377 us and the 4 MiB probe between 24.3 and 19.1 GB/s; step x probe stayed
//   within about 5% of its mean. The cell's own data does not fit the private caches either, so the
//   probe's reads displace nothing a step would have found there.
// MemoryProbe is one thread's buffer; TeamMemoryProbe's parallel region is run by the sampler before
// the contention probe's (the team's wake-up just before a sample).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace arch_bench {

class MemoryProbe {
 public:
  enum class Reading { flushed, warm };
  static constexpr std::size_t kFlushedBytes = 512 * 1024;
  // flushed: kFlushedBytes; warm: `warm_bytes` (rounded up to 4 KiB), read once here so that its
  // pages are mapped and it lies in the caches as it will for every later reading.
  explicit MemoryProbe(Reading reading, std::size_t warm_bytes = 0);
  // Times one streaming read of the buffer (flushed from every cache first for Reading::flushed): GB/s.
  double read_gbps();
  std::size_t bytes() const { return bytes_; }

 private:
  struct FreeDeleter {
    void operator()(void* p) const noexcept;
  };
  Reading reading_;
  std::size_t bytes_;
  std::unique_ptr<std::uint64_t[], FreeDeleter> words_;
};

// Probes on every thread of the OpenMP team, each buffer first touched by its own thread (so its
// pages lie where that thread put them, as a cell's do).
class TeamMemoryProbe {
 public:
  explicit TeamMemoryProbe(MemoryProbe::Reading reading, std::size_t warm_bytes = 0);
  // All threads read their buffers at once: the slowest thread's GB/s.
  double read_gbps();
  int threads() const { return static_cast<int>(probes_.size()); }

 private:
  std::vector<std::unique_ptr<MemoryProbe>> probes_;
};

// The bytes of the warm probe for this host: twice one core's private cache (L2, else L1d; 1 MiB when
// neither is known). A hot cell takes the probe when its buffers exceed the team's private caches:
// that is, more than team_threads x the private cache.
std::size_t warm_probe_bytes();
bool hot_cell_streams_past_private_caches(std::int64_t cell_bytes, int team_threads);

}  // namespace arch_bench
