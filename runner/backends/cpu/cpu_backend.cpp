#include "runner/backends/cpu/cpu_backend.hpp"

#include <chrono>
#include <cstdlib>
#include <immintrin.h>

#include "runner/backends/cpu/host_facts.hpp"

namespace arch_bench {

namespace {
constexpr std::size_t kAlignment = 64;  // one cache line; also what AVX-512 loads like
constexpr std::size_t kCacheLine = 64;
}  // namespace

void* HostAllocator::raw_allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
}

void HostAllocator::raw_deallocate(void* pointer, std::size_t) noexcept { std::free(pointer); }

double CpuBackend::time_ms(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

void CpuBackend::evict(std::span<const ByteSpan> buffers) {
  // clflush writes back and invalidates the line in every cache level of every core, which is
  // exactly "the data is not in cache" without having to stream a buffer larger than the LLC.
  for (const ByteSpan& buffer : buffers) {
    const char* begin = reinterpret_cast<const char*>(buffer.data());
    for (std::size_t offset = 0; offset < buffer.size(); offset += kCacheLine) {
      _mm_clflush(begin + offset);
    }
  }
  _mm_mfence();
}

nlohmann::json CpuBackend::facts() const { return host_facts(); }

}  // namespace arch_bench
