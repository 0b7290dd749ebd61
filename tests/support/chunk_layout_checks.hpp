#pragma once
// What the chunkwise tensor-core kernels (mechanisms/common/chunk_delta_rule.cuh,
// chunk_scalar_decay.cuh, rwkv/rwkv7/chunk_cuda.cu) need of a plan, asserted once for the plan
// tests: chunks that cover the tokens once each; shared-memory regions in the order placed, 128-byte
// aligned, disjoint and inside the layout's bytes; row strides wmma::load/store_matrix_sync accept
// (ldm a multiple of 8 bf16 or 4 fp32 elements, and a tile 16 rows down moving the pointer by a
// multiple of 32 bytes); and the workspace elements the prepare kernel writes.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace arch_bench::testing {

// `chunks` chunks of up to `chunk` tokens cover [0, tokens) once each, only the last one short;
// rows(c) is chunk c's token count as the kernels compute it.
template <class Rows>
void expect_chunks_cover_tokens(std::int64_t tokens, std::int64_t chunks, int chunk, Rows rows) {
  EXPECT_EQ(chunks, (tokens + chunk - 1) / chunk) << tokens;
  std::int64_t covered = 0;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const int n = rows(tokens, c);
    EXPECT_GE(n, 1) << tokens << " chunk " << c;
    EXPECT_LE(n, chunk) << tokens << " chunk " << c;
    if (c + 1 < chunks) {
      EXPECT_EQ(n, chunk) << "only the last chunk is short";
    }
    covered += n;
  }
  EXPECT_EQ(covered, tokens);
}

// Region [offset, offset + bytes) of a layout member.
struct SharedRegion {
  std::size_t offset;
  std::size_t bytes;
};

// `regions` in the order the plan placed them, inside a layout of `total` bytes.
inline void expect_disjoint_aligned(const std::vector<SharedRegion>& regions, std::size_t total) {
  for (std::size_t r = 0; r < regions.size(); ++r) {
    EXPECT_EQ(regions[r].offset % 128, 0u) << "region " << r;
    const std::size_t end = regions[r].offset + regions[r].bytes;
    if (r + 1 < regions.size()) {
      EXPECT_LE(end, regions[r + 1].offset) << "region " << r << " overlaps the next";
    }
    EXPECT_LE(end, total) << "region " << r;
  }
}

inline constexpr int kWmmaFragmentRows = 16;

// The row stride (elements) of a bf16 wmma operand tile.
inline void expect_wmma_bf16_stride(int ld) {
  EXPECT_EQ(ld % 8, 0) << ld;
  EXPECT_EQ((kWmmaFragmentRows * ld * 2) % 32, 0) << ld;
}

// The row stride (elements) of an fp32 wmma accumulator tile.
inline void expect_wmma_float_stride(int ld) {
  EXPECT_EQ(ld % 4, 0) << ld;
  EXPECT_EQ((kWmmaFragmentRows * ld * 4) % 32, 0) << ld;
}

// A workspace region: its element offset and row width ([heads][chunks][chunk tokens][width]).
struct WorkspacePart {
  std::int64_t offset;
  int width;
};

// How often the prepare kernel (one block per (head, chunk): block = bh * chunks + chunk) writes
// each of the `total` workspace elements, every block writing `chunk_tokens` rows of every part at
// part.offset + chunk_offset(plan, bh, chunk, part.width).
template <class Plan, class ChunkOffset>
std::vector<int> prepare_writes(const Plan& plan, std::span<const WorkspacePart> parts, int chunk_tokens,
                                std::int64_t total, ChunkOffset chunk_offset) {
  std::vector<int> written(static_cast<std::size_t>(total), 0);
  for (std::int64_t block = 0; block < plan.prepare_blocks; ++block) {
    const std::int64_t b = block / plan.chunks, c = block % plan.chunks;
    for (const WorkspacePart& part : parts) {
      const std::int64_t base = part.offset + chunk_offset(plan, b, c, part.width);
      for (std::int64_t e = 0; e < chunk_tokens * part.width; ++e) {
        EXPECT_LT(base + e, total);
        if (base + e < total) ++written[static_cast<std::size_t>(base + e)];
      }
    }
  }
  return written;
}

}  // namespace arch_bench::testing
