#include "core/backends/cpu/cpu_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

#include "core/backends/cpu/host_facts.hpp"
#include "core/backends/cpu/flush_cache.hpp"
#include "core/stop_request.hpp"

namespace arch_bench {

namespace {
constexpr std::size_t kAlignment = 64;  // one cache line; also what AVX-512 loads like
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}  // namespace

void* HostAllocator::raw_allocate(std::size_t bytes) {
  if (bytes >= kHugePage) {
    // Whole 2 MiB pages, asked for as transparent huge pages (the kernel's default THP mode,
    // "madvise", gives them only to regions that ask). In a VM every TLB miss is a two-level page
    // walk, and with 4 KiB pages a kernel streaming tens of MiB misses every 16 rows of 256 B: the
    // recurrent linear-attention prefill at T = 8192 (64 MiB of q, k, v and outputs) took 1.5x as
    // long per token as at T = 2048 (whose 16 MiB stay in L3), and 1.7x less with huge pages.
    // Touched here, so that no timed call pays the 2 MiB page faults (or a compaction).
    //
    // The buffer starts `color` bytes into its first huge page, a different multiple of 256 for each
    // of 16 consecutive buffers: buffers that all began on a 2 MiB boundary would put row t of q, k,
    // v and the outputs at the same address modulo 4 KiB, and a load that matches an earlier store
    // in its low 12 bits waits for it (4K aliasing). With every buffer aligned alike, the
    // prefills of gated_deltanet and rwkv6 at T = 8192 ran 12-34% slower in one interleaved
    // comparison; offset, they ran as before. The base pointer is kept in the 8 bytes before the
    // buffer for raw_deallocate.
    const std::size_t color = kAlignment + 256 * (next_color_++ % 16);
    const std::size_t rounded = (bytes + color + kHugePage - 1) / kHugePage * kHugePage;
    char* base = static_cast<char*>(std::aligned_alloc(kHugePage, rounded));
    if (base == nullptr) return nullptr;
    madvise(base, rounded, MADV_HUGEPAGE);  // advice: refused or unsupported is no error
    // Touching gigabytes takes seconds of page faults: in slices, so that a SIGTERM is seen within
    // one (core/stop_request.hpp).
    constexpr std::size_t kTouchSlice = std::size_t{64} << 20;
    for (std::size_t offset = 0; offset < rounded; offset += kTouchSlice) {
      if (stop_requested()) {
        std::free(base);
        throw_if_stop_requested("allocating the cell's buffers");
      }
      std::memset(base + offset, 0, std::min(kTouchSlice, rounded - offset));
    }
    char* buffer = base + color;
    std::memcpy(buffer - sizeof(char*), &base, sizeof(char*));
    return buffer;
  }
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
}

void HostAllocator::raw_deallocate(void* pointer, std::size_t bytes) noexcept {
  if (pointer != nullptr && bytes >= kHugePage) {
    char* base = nullptr;
    std::memcpy(&base, static_cast<char*>(pointer) - sizeof(char*), sizeof(char*));
    std::free(base);
    return;
  }
  std::free(pointer);
}

double CpuBackend::time_ms(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

void CpuBackend::evict(std::span<const ByteSpan> buffers) {
  for (const ByteSpan& buffer : buffers) flush_cache_range(buffer.data(), buffer.size());
}

nlohmann::json CpuBackend::facts() const { return host_facts(); }

}  // namespace arch_bench
