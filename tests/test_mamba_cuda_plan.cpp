// mamba CUDA launch planning, on the CPU: the decode groups cover every (row, state entry) once and
// never straddle a warp, the scan blocks cover every (batch, channel) and every token of a chunk
// once, the shared tiles are conflict-free for a warp's reads and fit without opt-in.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "mechanisms/mamba/cuda_plan.hpp"
#include "mechanisms/registry.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

constexpr std::size_t kSharedWithoutOptIn = 48 * 1024;

bool all_once(const std::vector<int>& touched) {
  return std::all_of(touched.begin(), touched.end(), [](int n) { return n == 1; });
}

TEST(MambaCudaPlan, DecodeGroupsCoverEveryStateEntryOnceWithinOneWarp) {
  for (const std::int64_t n : {1, 3, 16, 17, 32, 64, 256}) {
    for (const std::int64_t channels : {1, 5, 512}) {
      const MambaShape shape{2, channels, n};
      const MambaDecodePlan plan = plan_mamba_decode(shape);
      EXPECT_EQ(32 % plan.lanes, 0) << n;  // a power of two <= 32: the shuffles stay in one warp
      EXPECT_GE(plan.lanes, std::min<std::int64_t>(n, 32)) << n;
      EXPECT_EQ(plan.threads % plan.lanes, 0);
      std::vector<int> touched(static_cast<std::size_t>(shape.rows() * n), 0);
      for (std::int64_t block = 0; block < plan.blocks; ++block) {
        for (int t = 0; t < plan.threads; ++t) {
          const MambaDecodeSlot slot = mamba_decode_slot(plan, block, t);
          if (slot.row >= shape.rows()) continue;
          // Every lane of a group shares the warp of lane 0.
          EXPECT_EQ((t - slot.lane) / 32, t / 32);
          for (std::int64_t s = slot.lane; s < n; s += plan.lanes) ++touched[static_cast<std::size_t>(slot.row * n + s)];
        }
      }
      EXPECT_TRUE(all_once(touched)) << "N " << n << " channels " << channels;
    }
  }
  EXPECT_EQ(plan_mamba_decode({8, 512, 16}).lanes, 16);
}

TEST(MambaCudaPlan, ScanBlocksCoverEveryRowAndEveryTokenOnce) {
  for (const std::int64_t channels : {1, 2, 3, 512}) {
    for (const std::int64_t tokens : {1, 1023, 1024, 1025, 3000}) {
      const MambaShape shape{3, channels, 16};
      const MambaPrefillPlan plan = plan_mamba_prefill(shape, tokens);
      EXPECT_EQ(plan.chunks, (tokens + kMambaScanChunk - 1) / kMambaScanChunk);
      std::vector<int> rows(static_cast<std::size_t>(shape.rows()), 0);
      for (std::int64_t block = 0; block < plan.blocks; ++block) {
        const MambaScanRun run = mamba_scan_run(block, plan.channel_groups);
        ASSERT_LT(run.batch, shape.batch);
        for (int ch = 0; ch < kMambaScanChannels; ++ch) {
          if (run.first_channel + ch < channels) ++rows[static_cast<std::size_t>(run.batch * channels + run.first_channel + ch)];
        }
      }
      EXPECT_TRUE(all_once(rows)) << channels << " " << tokens;
    }
  }
  // Items of a thread are consecutive tokens (the thread composes them in order before the block
  // scan), threads in order, and a chunk holds every token once.
  std::vector<int> tokens(kMambaScanChunk, 0);
  for (int t = 0; t < kMambaScanThreads; ++t) {
    for (int i = 0; i < kMambaScanItems; ++i) {
      const int token = mamba_scan_token(t, i);
      if (i > 0) {
        EXPECT_EQ(token, mamba_scan_token(t, i - 1) + 1);
      }
      ++tokens[static_cast<std::size_t>(token)];
    }
  }
  EXPECT_TRUE(all_once(tokens));
}

TEST(MambaCudaPlan, TileReadsOfAWarpHitThirtyTwoBanks) {
  for (int g = 0; g < kMambaScanStateGroup; ++g) {
    for (int i = 0; i < kMambaScanItems; ++i) {
      for (int warp = 0; warp < kMambaScanThreads / 32; ++warp) {
        std::set<int> banks;
        for (int lane = 0; lane < 32; ++lane) banks.insert(mamba_tile_index(g, mamba_scan_token(warp * 32 + lane, i)) % 32);
        EXPECT_EQ(banks.size(), 32u) << g << " " << i << " " << warp;
      }
    }
  }
  // Tiles of different entries never overlap.
  EXPECT_LT(mamba_tile_index(0, kMambaScanChunk - 1), mamba_tile_index(1, 0));
}

TEST(MambaCudaPlan, SharedMemoryFitsForEveryStateSize) {
  for (const std::int64_t n : {1, 16, 256}) {
    const MambaPrefillPlan plan = plan_mamba_prefill({1, 8, n}, 100);
    EXPECT_EQ(plan.shared_bytes, sizeof(float) * static_cast<std::size_t>(mamba_scan_shared_floats(static_cast<int>(n))));
    EXPECT_LE(plan.shared_bytes + 1024, kSharedWithoutOptIn) << n;
  }
  const MambaPrefillPlan empty = plan_mamba_prefill({1, 8, 16}, 0);
  EXPECT_EQ(empty.chunks, 0);
}

TEST(MambaCudaPlan, UnsupportedCells) {
  const Mechanism* mamba = find_mechanism("mamba");
  ASSERT_NE(mamba, nullptr);
  Cell cell = testing::mechanism_cell("mamba", 8, 64, 1024, DType::bfloat16, Phase::prefill);
  cell.options.set("state_size", std::int64_t{16});
  EXPECT_FALSE(mamba_cuda_unsupported(cell));
  EXPECT_EQ(mamba->unsupported_on(cell, "cuda"), mamba_cuda_unsupported(cell));
  cell.options.set("state_size", std::int64_t{257});
  EXPECT_TRUE(mamba_cuda_unsupported(cell));
  cell.options.set("state_size", std::int64_t{0});
  EXPECT_TRUE(mamba_cuda_unsupported(cell));
}

}  // namespace
}  // namespace arch_bench
