#include "runner/measure/memory_probe.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "runner/measure/flush_cache.hpp"

namespace arch_bench {

namespace {
constexpr std::size_t kWords = MemoryProbe::kBytes / sizeof(std::uint64_t);
constexpr std::size_t kCacheLine = 64;

volatile std::uint64_t g_sink = 0;  // keeps the timed read live

// Four independent accumulators so the read is bound by memory, not by an add chain; integer adds
// reassociate freely, so the compiler vectorises this without -ffast-math.
__attribute__((noinline)) std::uint64_t sum_words(const std::uint64_t* words) {
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  for (std::size_t i = 0; i < kWords; i += 4) {
    a += words[i];
    b += words[i + 1];
    c += words[i + 2];
    d += words[i + 3];
  }
  return (a + b) + (c + d);
}
}  // namespace

void MemoryProbe::FreeDeleter::operator()(void* p) const noexcept { std::free(p); }

MemoryProbe::MemoryProbe() : words_(static_cast<std::uint64_t*>(std::aligned_alloc(kCacheLine, kBytes))) {
  if (!words_) throw std::bad_alloc();
  for (std::size_t i = 0; i < kWords; ++i) words_[i] = i;  // touched: every page is mapped before timing
}

double MemoryProbe::read_gbps() {
  flush_cache_range(words_.get(), kBytes);
  const auto start = std::chrono::steady_clock::now();
  g_sink = g_sink + sum_words(words_.get());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds > 0.0 ? static_cast<double>(kBytes) / seconds / 1e9 : 0.0;
}

}  // namespace arch_bench
