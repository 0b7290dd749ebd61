#include "runner/measure/memory_probe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>

#include <omp.h>

#include "core/backends/cpu/host_facts.hpp"
#include "core/backends/cpu/flush_cache.hpp"

namespace arch_bench {

namespace {
constexpr std::size_t kCacheLine = 64;
constexpr std::size_t kPage = 4096;

volatile std::uint64_t g_sink = 0;  // keeps the timed read live

// Four independent accumulators so the read is bound by memory, not by an add chain; integer adds
// reassociate freely, so the compiler vectorises this without -ffast-math.
__attribute__((noinline)) std::uint64_t sum_words(const std::uint64_t* words, std::size_t count) {
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  for (std::size_t i = 0; i < count; i += 4) {
    a += words[i];
    b += words[i + 1];
    c += words[i + 2];
    d += words[i + 3];
  }
  return (a + b) + (c + d);
}

// One core's private cache, or 512 KiB (the smallest L2 of the machines this project has met) when
// the host does not say.
std::int64_t private_cache_or_default() {
  const std::int64_t bytes = private_cache_bytes();
  return bytes > 0 ? bytes : 512 * 1024;
}

std::size_t probe_bytes(MemoryProbe::Reading reading, std::size_t warm_bytes) {
  if (reading == MemoryProbe::Reading::flushed) return MemoryProbe::kFlushedBytes;
  return std::max(kPage, (warm_bytes + kPage - 1) / kPage * kPage);
}
}  // namespace

void MemoryProbe::FreeDeleter::operator()(void* p) const noexcept { std::free(p); }

MemoryProbe::MemoryProbe(Reading reading, std::size_t warm_bytes)
    : reading_(reading),
      bytes_(probe_bytes(reading, warm_bytes)),
      words_(static_cast<std::uint64_t*>(std::aligned_alloc(kCacheLine, bytes_))) {
  if (!words_) throw std::bad_alloc();
  const std::size_t count = bytes_ / sizeof(std::uint64_t);
  for (std::size_t i = 0; i < count; ++i) words_[i] = i;  // touched: every page is mapped before timing
  g_sink = g_sink + sum_words(words_.get(), count);
}

double MemoryProbe::read_gbps() {
  if (reading_ == Reading::flushed) flush_cache_range(words_.get(), bytes_);
  const auto start = std::chrono::steady_clock::now();
  g_sink = g_sink + sum_words(words_.get(), bytes_ / sizeof(std::uint64_t));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds > 0.0 ? static_cast<double>(bytes_) / seconds / 1e9 : 0.0;
}

TeamMemoryProbe::TeamMemoryProbe(MemoryProbe::Reading reading, std::size_t warm_bytes)
    : probes_(static_cast<std::size_t>(omp_get_max_threads())) {
  const int team = threads();
#pragma omp parallel num_threads(team)
  {
    const int thread = omp_get_thread_num();
    probes_[static_cast<std::size_t>(thread)] = std::make_unique<MemoryProbe>(reading, warm_bytes);
  }
  // A team smaller than asked for (dynamic threads) leaves slots empty: probe with the threads there are.
  std::erase(probes_, nullptr);
  if (probes_.empty()) probes_.push_back(std::make_unique<MemoryProbe>(reading, warm_bytes));
}

double TeamMemoryProbe::read_gbps() {
  const int team = threads();
  double slowest = std::numeric_limits<double>::infinity();
#pragma omp parallel num_threads(team) reduction(min : slowest)
  {
    const int thread = omp_get_thread_num();
    slowest = std::min(slowest, probes_[static_cast<std::size_t>(thread)]->read_gbps());
  }
  return std::isfinite(slowest) ? slowest : 0.0;
}

std::size_t warm_probe_bytes() { return 2 * static_cast<std::size_t>(private_cache_or_default()); }

bool hot_cell_streams_past_private_caches(std::int64_t cell_bytes, int team_threads) {
  return cell_bytes > private_cache_or_default() * std::max(1, team_threads);
}

}  // namespace arch_bench
