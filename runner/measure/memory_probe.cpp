#include "runner/measure/memory_probe.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <new>

#include <omp.h>

#include <immintrin.h>

namespace arch_bench {

namespace {
constexpr std::size_t kWords = MemoryProbe::kBytesPerThread / sizeof(std::uint64_t);  // per thread
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

MemoryProbe::MemoryProbe(int threads)
    : threads_(threads < 1 ? 1 : threads),
      words_(static_cast<std::uint64_t*>(std::aligned_alloc(kCacheLine, kBytesPerThread * threads_))) {
  if (!words_) throw std::bad_alloc();
  // Touched: every page is mapped before anything is timed.
  for (std::size_t i = 0; i < kWords * threads_; ++i) words_[i] = i;
}

double MemoryProbe::read_gbps() {
  double slowest = 0.0;
#pragma omp parallel num_threads(threads_) reduction(max : slowest)
  {
    const std::uint64_t* words = words_.get() + kWords * omp_get_thread_num();
    const char* bytes = reinterpret_cast<const char*>(words);
    for (std::size_t offset = 0; offset < kBytesPerThread; offset += kCacheLine) _mm_clflush(bytes + offset);
    _mm_mfence();
#pragma omp barrier
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t sum = sum_words(words);
    slowest = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
#pragma omp atomic
    g_sink += sum;
  }
  const double bytes = static_cast<double>(kBytesPerThread) * threads_;
  return slowest > 0.0 ? bytes / slowest / 1e9 : 0.0;
}

}  // namespace arch_bench
