#pragma once
// Writes back and invalidates every cache line of a range in every cache level of every core: "the
// data is not in cache" without streaming a buffer larger than the last-level cache. One
// instruction per line where the ISA has one in user mode: x86 clflush, AArch64 dc civac (Linux
// lets user code run it); then a fence so that the flushes are done before what follows is timed.
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace arch_bench {

// The stride of the flushes: 64 bytes is the line of every x86 CPU and of most AArch64 ones (a
// CPU with longer lines is flushed more than once per line, which is harmless).
inline constexpr std::size_t kFlushStride = 64;

// The lines a range touches: `count` lines from the line-aligned address `first`. A range that
// starts inside a line ends one line later than its byte count alone would say.
struct CacheLines {
  std::uintptr_t first = 0;
  std::size_t count = 0;
};

inline CacheLines cache_lines_of(const void* data, std::size_t bytes) {
  if (bytes == 0) return {};
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = begin / kFlushStride * kFlushStride;
  const std::uintptr_t last = (begin + bytes - 1) / kFlushStride * kFlushStride;
  return {first, static_cast<std::size_t>((last - first) / kFlushStride + 1)};
}

// Writes back and invalidates every line of the range, then fences, so that the flushes are done
// before what follows is timed.
inline void flush_cache_range(const void* data, std::size_t bytes) {
  const CacheLines lines = cache_lines_of(data, bytes);
#if defined(__x86_64__) || defined(__i386__)
  for (std::size_t line = 0; line < lines.count; ++line) {
    _mm_clflush(reinterpret_cast<const void*>(lines.first + line * kFlushStride));
  }
  _mm_mfence();
#elif defined(__aarch64__)
  for (std::size_t line = 0; line < lines.count; ++line) {
    asm volatile("dc civac, %0" : : "r"(lines.first + line * kFlushStride) : "memory");
  }
  asm volatile("dsb ish" : : : "memory");
#else
#error "flush_cache_range: no user-mode cache flush known for this architecture (add one, or build on x86-64/AArch64)"
#endif
}

}  // namespace arch_bench
