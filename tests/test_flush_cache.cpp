// The cold-sample eviction: which cache lines a range covers (a range that starts inside a line used
// to leave its last line cached), and that the flush leaves every byte as it was (clflush writes
// dirty lines back).
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "core/backends/cpu/flush_cache.hpp"

namespace arch_bench {
namespace {

TEST(FlushCache, LinesOfARangeIncludeTheLinesItsEndsFallIn) {
  alignas(64) static char bytes[512];
  const auto line0 = reinterpret_cast<std::uintptr_t>(bytes);
  EXPECT_EQ(cache_lines_of(bytes, 0).count, 0u);
  EXPECT_EQ(cache_lines_of(bytes, 1).count, 1u);
  EXPECT_EQ(cache_lines_of(bytes, 64).count, 1u);
  EXPECT_EQ(cache_lines_of(bytes, 65).count, 2u);
  EXPECT_EQ(cache_lines_of(bytes, 128).first, line0);
  // 64 bytes from the middle of a line reach into the next one.
  const CacheLines straddling = cache_lines_of(bytes + 32, 64);
  EXPECT_EQ(straddling.first, line0);
  EXPECT_EQ(straddling.count, 2u);
  const CacheLines inside = cache_lines_of(bytes + 100, 20);
  EXPECT_EQ(inside.first, line0 + 64);
  EXPECT_EQ(inside.count, 1u);
}

TEST(FlushCache, EvictionKeepsEveryByte) {
  // Buffers that start and end inside a line, and one that does not.
  CpuBackend backend;
  std::vector<std::uint32_t> first(100003), second(517);
  std::iota(first.begin(), first.end(), 7u);
  std::iota(second.begin(), second.end(), 1u << 20);
  const std::vector<std::uint32_t> first_copy = first, second_copy = second;
  const std::vector<ByteSpan> buffers{
      ByteSpan(reinterpret_cast<std::byte*>(first.data()) + 3, first.size() * 4 - 5),
      ByteSpan(reinterpret_cast<std::byte*>(second.data()), second.size() * 4)};
  backend.evict(buffers);
  backend.evict(buffers);
  EXPECT_EQ(first, first_copy);
  EXPECT_EQ(second, second_copy);
}

}  // namespace
}  // namespace arch_bench
