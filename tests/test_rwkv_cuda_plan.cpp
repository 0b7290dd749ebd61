// RWKV CUDA launch planning (mechanisms/rwkv/cuda_plan.hpp), on the CPU: the grids and thread maps
// the three scan kernels use (the same constexpr maps, replayed here) cover every state element and
// every channel exactly once, a column's lanes stay inside one aligned group of a warp (the
// shuffles of column_sum), shared memory and token tiles, and the cells the kernels refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "mechanisms/registry.hpp"
#include "mechanisms/rwkv/cuda_plan.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

constexpr std::size_t kSharedWithoutOptIn = 48 * 1024;
const std::vector<std::int64_t> kDims = {1, 3, 16, 31, 48, 64, 100, 128, 200, 256};
// No device (128-thread blocks), an H100/H200's 132 SMs, and so many that every grid is small (one warp).
const std::vector<int> kMultiprocessors = {0, 132, 1 << 20};

TEST(RwkvCudaPlan, MatrixScanHoldsEveryStateElementInExactlyOneLane) {
  for (const RwkvVersion version : {RwkvVersion::v6, RwkvVersion::v7}) {
    for (const std::int64_t dim : kDims) {
      for (const int sms : kMultiprocessors) {
        const std::int64_t bh = 3;
        const RwkvScanPlan plan = plan_rwkv_scan(version, bh, 2, 100, dim, sms);
        EXPECT_EQ(plan.columns_per_block * kRwkvCudaRowParts, plan.threads);
        ASSERT_GE(plan.rows_per_lane * kRwkvCudaRowParts, dim) << dim;
        EXPECT_TRUE(std::ranges::find(kRwkvCudaRowCounts, plan.rows_per_lane) != std::end(kRwkvCudaRowCounts));
        std::vector<int> held(static_cast<std::size_t>(bh * dim * dim), 0);
        for (std::int64_t block = 0; block < plan.blocks; ++block) {
          for (int thread = 0; thread < plan.threads; ++thread) {
            const RwkvScanThread at = rwkv_scan_thread(block, thread, plan.column_blocks, plan.columns_per_block);
            ASSERT_LT(at.bh, bh);
            if (at.column >= dim) continue;  // padding lanes hold nothing
            for (int q = 0; q < plan.rows_per_lane; ++q) {
              const int row = rwkv_scan_key_row(at.part, q);
              if (row < dim) ++held[static_cast<std::size_t>((at.bh * dim + row) * dim + at.column)];
            }
          }
        }
        EXPECT_TRUE(std::ranges::all_of(held, [](int n) { return n == 1; })) << "dim " << dim << " sms " << sms;
      }
    }
  }
}

TEST(RwkvCudaPlan, AColumnsLanesAreOneAlignedGroupOfAWarp) {
  // column_sum's xor shuffles (offsets 4, 2, 1) stay inside aligned groups of kRwkvCudaRowParts lanes:
  // those lanes must be exactly the ones sharing a column, with parts 0..7.
  for (const int threads : {32, 64, 128}) {
    const int columns = threads / kRwkvCudaRowParts;
    for (int thread = 0; thread < threads; ++thread) {
      const RwkvScanThread at = rwkv_scan_thread(5, thread, 4, columns);
      const int group_first = thread - thread % kRwkvCudaRowParts;
      for (int lane = group_first; lane < group_first + kRwkvCudaRowParts; ++lane) {
        const RwkvScanThread other = rwkv_scan_thread(5, lane, 4, columns);
        EXPECT_EQ(other.column, at.column);
        EXPECT_EQ(other.bh, at.bh);
        EXPECT_EQ(lane / 32, thread / 32);
      }
      EXPECT_EQ(at.part, thread % kRwkvCudaRowParts);
    }
  }
}

TEST(RwkvCudaPlan, TokenTilesFitSharedMemoryAndDecodeStagesOneToken) {
  for (const RwkvVersion version : {RwkvVersion::v6, RwkvVersion::v7}) {
    const int vectors = version == RwkvVersion::v6 ? int{kRwkv6StagedCount} : int{kRwkv7StagedCount};
    for (const std::int64_t dim : kDims) {
      for (const std::int64_t tokens : {1, 5, 16, 17, 8192}) {
        const RwkvScanPlan plan = plan_rwkv_scan(version, 2, 1, tokens, dim);
        EXPECT_EQ(plan.staged_vectors, vectors);
        EXPECT_GE(plan.token_tile, 1);
        EXPECT_LE(plan.token_tile, std::min<std::int64_t>(tokens, kRwkvCudaMaxTokenTile));
        EXPECT_EQ(plan.shared_bytes, sizeof(float) * vectors * dim * plan.token_tile);
        EXPECT_LE(plan.shared_bytes, kSharedWithoutOptIn);
        if (tokens == 1) {
          EXPECT_EQ(plan.token_tile, 1);
        }
      }
    }
  }
  // d = 64, rwkv7: 16 tokens x 6 vectors x 64 channels x 4 bytes = 24 KiB.
  EXPECT_EQ(plan_rwkv_scan(RwkvVersion::v7, 128, 8, 8192, 64).token_tile, 16);
}

TEST(RwkvCudaPlan, Rwkv4ScanGivesEveryChannelOneThread) {
  for (const std::int64_t dim : kDims) {
    for (const std::int64_t bh : {1, 3, 128}) {
      for (const int sms : kMultiprocessors) {
        const RwkvScanPlan plan = plan_rwkv_scan(RwkvVersion::v4, bh, 1, 10, dim, sms);
        std::vector<int> owned(static_cast<std::size_t>(bh * dim), 0);
        for (std::int64_t block = 0; block < plan.blocks; ++block) {
          for (int thread = 0; thread < plan.threads; ++thread) {
            const std::int64_t c = rwkv4_scan_channel(block, thread, plan.threads);
            if (c < bh * dim) ++owned[static_cast<std::size_t>(c)];
          }
        }
        EXPECT_TRUE(std::ranges::all_of(owned, [](int n) { return n == 1; })) << dim << " " << bh;
        EXPECT_LT((plan.blocks - 1) * plan.threads, bh * dim);  // no block entirely idle
        EXPECT_EQ(plan.shared_bytes, 0u);
      }
    }
  }
}

TEST(RwkvCudaPlan, SmallGridsSpreadOverTheSms) {
  // Blocks halve from 128 threads down to one warp while the grid has under two blocks per SM.
  for (const RwkvVersion version : {RwkvVersion::v4, RwkvVersion::v6, RwkvVersion::v7}) {
    for (const std::int64_t dim : kDims) {
      for (const std::int64_t bh : {1, 8, 128, 4096}) {
        for (const int sms : kMultiprocessors) {
          const RwkvScanPlan plan = plan_rwkv_scan(version, bh, 8, 1, dim, sms);
          const RwkvScanPlan wider = plan_rwkv_scan(version, bh, 8, 1, dim, 0);
          EXPECT_TRUE(plan.threads == 32 || plan.threads == 64 || plan.threads == 128);
          EXPECT_EQ(wider.threads, kRwkvCudaThreads);
          // Smaller blocks only where the grid is small, and then as small as needed or one warp.
          if (plan.threads < kRwkvCudaThreads) {
            EXPECT_LT(wider.blocks, 2 * std::int64_t{sms});
          }
          EXPECT_TRUE(plan.threads == 32 || plan.blocks >= 2 * std::int64_t{sms}) << dim << " " << bh << " " << sms;
          EXPECT_GE(plan.blocks, wider.blocks);
        }
      }
    }
  }
  // The decode steps of the guide's table (H100/H200: 132 SMs).
  struct Expected {
    RwkvVersion version;
    std::int64_t bh, dim;
    int threads;
    std::int64_t blocks;
  };
  for (const Expected& e : {Expected{RwkvVersion::v6, 8, 64, 32, 128}, Expected{RwkvVersion::v6, 8, 128, 32, 256},
                            Expected{RwkvVersion::v6, 128, 64, 128, 512}, Expected{RwkvVersion::v7, 128, 128, 128, 1024},
                            Expected{RwkvVersion::v4, 8, 64, 32, 16}, Expected{RwkvVersion::v4, 128, 64, 32, 256},
                            Expected{RwkvVersion::v4, 128, 128, 32, 512}}) {
    const RwkvScanPlan plan = plan_rwkv_scan(e.version, e.bh, 8, 1, e.dim, 132);
    EXPECT_EQ(plan.threads, e.threads) << e.bh << " " << e.dim;
    EXPECT_EQ(plan.blocks, e.blocks) << e.bh << " " << e.dim;
  }
}

TEST(RwkvCudaPlan, RefusesWhatTheKernelsCannotRun) {
  for (const char* id : {"rwkv4", "rwkv6", "rwkv7"}) {
    const Mechanism* mechanism = find_mechanism(id);
    ASSERT_NE(mechanism, nullptr);
    Cell cell = testing::small_cell(4, 64, 100, DType::bfloat16, Phase::prefill);
    cell.mechanism = id;
    EXPECT_FALSE(mechanism->unsupported_on(cell, "cuda")) << id;
    cell.head_dim = 257;
    EXPECT_TRUE(mechanism->unsupported_on(cell, "cuda")) << id;
    cell.head_dim = 64;
    cell.batch = std::int64_t{1} << 40;  // more blocks than gridDim.x takes
    const auto why = mechanism->unsupported_on(cell, "cuda");
    ASSERT_TRUE(why) << id;
    EXPECT_NE(why->find("grid"), std::string::npos) << *why;
  }
}

}  // namespace
}  // namespace arch_bench
