#pragma once
// Writes back and invalidates every cache line of a range in every cache level of every core: "the
// data is not in cache" without streaming a buffer larger than the last-level cache. One
// instruction per line where the ISA has one in user mode: x86 clflush, AArch64 dc civac (Linux
// lets user code run it); then a fence so that the flushes are done before what follows is timed.
#include <cstddef>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace arch_bench {

// The stride of the flushes: 64 bytes is the line of every x86 CPU and of most AArch64 ones (a
// CPU with longer lines is flushed more than once per line, which is harmless).
inline constexpr std::size_t kFlushStride = 64;

inline void flush_cache_range(const void* data, std::size_t bytes) {
  const char* begin = static_cast<const char*>(data);
#if defined(__x86_64__) || defined(__i386__)
  for (std::size_t offset = 0; offset < bytes; offset += kFlushStride) _mm_clflush(begin + offset);
  _mm_mfence();
#elif defined(__aarch64__)
  for (std::size_t offset = 0; offset < bytes; offset += kFlushStride) {
    asm volatile("dc civac, %0" : : "r"(begin + offset) : "memory");
  }
  asm volatile("dsb ish" : : : "memory");
#else
#error "flush_cache_range: no user-mode cache flush known for this architecture (add one, or build on x86-64/AArch64)"
#endif
}

}  // namespace arch_bench
