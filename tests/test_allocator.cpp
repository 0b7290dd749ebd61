// Allocator accounting through Buffer: what a report's peak memory and "allocations during timing"
// rest on.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/backends/allocator.hpp"
#include "core/backends/cpu/cpu_backend.hpp"

namespace arch_bench {
namespace {

TEST(Allocator, BuffersMoveCurrentPeakAndCount) {
  CpuBackend backend;
  Allocator& allocator = backend.allocator();
  EXPECT_EQ(allocator.current_bytes(), 0);
  EXPECT_EQ(allocator.peak_bytes(), 0);
  EXPECT_EQ(allocator.allocation_count(), 0);

  Buffer<float> floats(allocator, 100);
  EXPECT_EQ(floats.bytes(), 400u);
  EXPECT_EQ(allocator.current_bytes(), 400);
  EXPECT_EQ(allocator.peak_bytes(), 400);
  EXPECT_EQ(allocator.allocation_count(), 1);
  {
    Buffer<double> doubles(allocator, 10);
    EXPECT_EQ(allocator.current_bytes(), 480);
    EXPECT_EQ(allocator.peak_bytes(), 480);
    EXPECT_EQ(allocator.allocation_count(), 2);
  }
  // Freeing lowers current bytes; the peak remembers; the count counts allocations, not live ones.
  EXPECT_EQ(allocator.current_bytes(), 400);
  EXPECT_EQ(allocator.peak_bytes(), 480);
  EXPECT_EQ(allocator.allocation_count(), 2);
}

TEST(Allocator, ResetPeakStartsAtLiveBytes) {
  CpuBackend backend;
  Allocator& allocator = backend.allocator();
  Buffer<std::uint8_t> kept(allocator, 1000);
  { Buffer<std::uint8_t> transient(allocator, 5000); }
  EXPECT_EQ(allocator.peak_bytes(), 6000);
  allocator.reset_peak();
  EXPECT_EQ(allocator.peak_bytes(), 1000);
  { Buffer<std::uint8_t> next(allocator, 24); }
  EXPECT_EQ(allocator.peak_bytes(), 1024);
}

TEST(Allocator, MoveConstructionTransfersOwnership) {
  CpuBackend backend;
  Allocator& allocator = backend.allocator();
  Buffer<float> source(allocator, 64);
  float* const data = source.data();
  Buffer<float> target(std::move(source));
  EXPECT_EQ(target.data(), data);
  EXPECT_EQ(target.size(), 64u);
  EXPECT_EQ(source.data(), nullptr);
  EXPECT_EQ(source.size(), 0u);
  // A move is not an allocation and frees nothing.
  EXPECT_EQ(allocator.allocation_count(), 1);
  EXPECT_EQ(allocator.current_bytes(), 256);
}

TEST(Allocator, MoveAssignmentFreesTheOverwrittenBuffer) {
  CpuBackend backend;
  Allocator& allocator = backend.allocator();
  Buffer<float> small(allocator, 16);
  Buffer<float> large(allocator, 1024);
  EXPECT_EQ(allocator.current_bytes(), 64 + 4096);
  float* const large_data = large.data();
  small = std::move(large);
  EXPECT_EQ(small.data(), large_data);
  EXPECT_EQ(small.size(), 1024u);
  EXPECT_EQ(allocator.current_bytes(), 4096);
  EXPECT_EQ(allocator.allocation_count(), 2);
}

TEST(Allocator, DestructionReturnsEveryByte) {
  CpuBackend backend;
  Allocator& allocator = backend.allocator();
  {
    Buffer<double> a(allocator, 3);
    Buffer<std::uint16_t> b(allocator, 7);
    Buffer<float> moved_from(allocator, 5);
    Buffer<float> c(std::move(moved_from));
  }
  EXPECT_EQ(allocator.current_bytes(), 0);
  EXPECT_EQ(allocator.peak_bytes(), 24 + 14 + 20);
}

TEST(Allocator, CpuBuffersAreCacheLineAligned) {
  CpuBackend backend;
  Allocator& allocator = backend.allocator();
  // Odd sizes too: the host allocator rounds up to satisfy aligned_alloc's size rule.
  for (std::size_t count : {1u, 3u, 17u, 1000u, 4099u}) {
    Buffer<float> buffer(allocator, count);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % 64, 0u) << count << " floats";
    EXPECT_EQ(buffer.byte_span().size(), count * sizeof(float));
  }
}

// Buffers of 2 MiB and more lie in whole huge pages, each at its own offset modulo 4 KiB (so that
// row t of several streamed buffers never shares its low 12 address bits: 4K aliasing), stay
// cache-line aligned, are counted at the size asked for, and are fully writable.
TEST(Allocator, LargeCpuBuffersAreCacheLineAlignedAtDistinctOffsetsModulo4KiB) {
  CpuBackend backend;
  Allocator& allocator = backend.allocator();
  std::vector<Buffer<float>> buffers;
  std::vector<std::uintptr_t> offsets;
  std::int64_t bytes_live = 0;
  for (int i = 0; i < 8; ++i) {
    const std::size_t bytes = (std::size_t{2} << 20) + static_cast<std::size_t>(i) * 4096 * 3;
    const std::size_t count = bytes / sizeof(float);
    buffers.emplace_back(allocator, count);
    bytes_live += static_cast<std::int64_t>(count * sizeof(float));
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(buffers.back().data());
    EXPECT_EQ(address % 64, 0u) << i;
    offsets.push_back(address % 4096);
    buffers.back().data()[0] = 1.0f;
    buffers.back().data()[count - 1] = 2.0f;
    EXPECT_EQ(buffers.back().data()[count - 1], 2.0f);
  }
  EXPECT_EQ(allocator.current_bytes(), bytes_live);
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(std::adjacent_find(offsets.begin(), offsets.end()), offsets.end()) << "two buffers alias modulo 4 KiB";
  buffers.clear();
  EXPECT_EQ(allocator.current_bytes(), 0);
}

}  // namespace
}  // namespace arch_bench
