// mamba CUDA launch planning, on the CPU: the decode groups cover every (row, state entry) once and
// never straddle a warp, the scan's warps cover every (batch, channel) and its lanes every token of
// a chunk once, the shared tiles are whole aligned vectors, conflict-free to stage, and fit without
// opt-in; the least bytes of a prefill count every tensor once.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "mechanisms/mamba/cuda_plan.hpp"
#include "mechanisms/mamba/inputs.hpp"
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
  for (const std::int64_t channels : {1, 2, 7, 8, 9, 512}) {
    for (const std::int64_t tokens : {1, 255, 256, 257, 3000}) {
      const MambaShape shape{3, channels, 16};
      const MambaPrefillPlan plan = plan_mamba_prefill(shape, tokens);
      EXPECT_EQ(plan.chunks, (tokens + kMambaScanChunk - 1) / kMambaScanChunk);
      EXPECT_EQ(plan.threads, 32 * kMambaScanWarps);
      std::vector<int> rows(static_cast<std::size_t>(shape.rows()), 0);
      for (std::int64_t block = 0; block < plan.blocks; ++block) {
        const MambaScanRun run = mamba_scan_run(block, plan.channel_groups);
        ASSERT_LT(run.batch, shape.batch);
        for (int warp = 0; warp < kMambaScanWarps; ++warp) {
          if (run.first_channel + warp < channels) ++rows[static_cast<std::size_t>(run.batch * channels + run.first_channel + warp)];
        }
      }
      EXPECT_TRUE(all_once(rows)) << channels << " " << tokens;
    }
  }
  // A lane's items are consecutive tokens (the lane folds them in order before the warp scan),
  // lanes in order, and a chunk holds every token once.
  std::vector<int> tokens(kMambaScanChunk, 0);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < kMambaScanItems; ++i) {
      const int token = mamba_scan_token(lane, i);
      if (i > 0) {
        EXPECT_EQ(token, mamba_scan_token(lane, i - 1) + 1);
      }
      ++tokens[static_cast<std::size_t>(token)];
    }
  }
  EXPECT_TRUE(all_once(tokens));
}

// The tile map of both storage dtypes: a bijection onto whole rows, a lane's items are whole
// 16-byte vectors at the offsets the kernel reads (vector j of lane l at (32 j + l) v), every row
// starts 16-byte aligned, and the staging writes of 32 consecutive threads hit each bank in one
// 32-bit word at most.
TEST(MambaCudaPlan, TileMapIsABijectionOfAlignedVectorsWithConflictFreeWrites) {
  for (const int bytes : {4, 2}) {
    const int v = mamba_tile_vector(bytes), stride = mamba_tile_stride(bytes);
    EXPECT_EQ(kMambaScanItems % v, 0) << bytes;
    EXPECT_EQ(stride * bytes % 16, 0) << bytes;
    std::vector<int> touched(static_cast<std::size_t>(kMambaScanStateGroup * stride), 0);
    for (int g = 0; g < kMambaScanStateGroup; ++g) {
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < kMambaScanItems; ++i) {
          const int at = mamba_tile_index(bytes, g, mamba_scan_token(lane, i));
          ASSERT_GE(at, g * stride);
          ASSERT_LT(at, g * stride + kMambaScanChunk);  // the row's padding stays unused
          EXPECT_EQ(at, g * stride + ((i / v) * 32 + lane) * v + i % v) << bytes << " " << g << " " << lane << " " << i;
          ++touched[static_cast<std::size_t>(at)];
        }
      }
    }
    int used = 0;
    for (const int t : touched) {
      EXPECT_LE(t, 1);
      used += t;
    }
    EXPECT_EQ(used, kMambaScanStateGroup * kMambaScanChunk);
    for (int first = 0; first < kMambaScanChunk * kMambaScanStateGroup; first += 32) {
      std::vector<std::set<int>> words(32);
      for (int e = first; e < first + 32; ++e) {
        const int word = mamba_tile_index(bytes, e % kMambaScanStateGroup, e / kMambaScanStateGroup) * bytes / 4;
        words[static_cast<std::size_t>(word % 32)].insert(word);
      }
      for (const auto& w : words) EXPECT_LE(w.size(), 1u) << "bytes " << bytes << " threads from " << first;
    }
  }
}

TEST(MambaCudaPlan, SharedMemoryFitsForEveryStateSizeAndDtype) {
  for (const std::int64_t n : {1, 16, 256}) {
    const MambaPrefillPlan plan = plan_mamba_prefill({1, 8, n}, 100);
    EXPECT_EQ(plan.shared_bytes, mamba_scan_shared_bytes(4, static_cast<int>(n)));
    EXPECT_GE(plan.shared_bytes, mamba_scan_shared_bytes(2, static_cast<int>(n)));  // bf16 tiles are smaller
    EXPECT_LE(plan.shared_bytes, kSharedWithoutOptIn) << n;
    EXPECT_GE(plan.shared_bytes, 2 * kMambaScanStateGroup * kMambaScanChunk * 4 + kMambaScanWarps * n * 4);
  }
  const MambaPrefillPlan empty = plan_mamba_prefill({1, 8, 16}, 0);
  EXPECT_EQ(empty.chunks, 0);
}

// The least bytes a prefill moves, against the sizes of the tensors a layer's inputs hold.
TEST(MambaCudaPlan, MinimumBytesCountEveryTensorOnce) {
  for (const DType dtype : {DType::float32, DType::bfloat16}) {
    Cell cell = testing::mechanism_cell("mamba", 2, 8, 300, dtype, Phase::prefill, 3);
    cell.options.set("state_size", std::int64_t{5});
    const MambaInputs in = make_mamba_inputs(cell, 300, 1);
    const std::int64_t e = dtype == DType::bfloat16 ? 2 : 4;
    // u, dt_raw, z read, out (the size of u) written; B and C read.
    const auto tensors = static_cast<std::int64_t>(4 * in.u.size() + in.B.size() + in.C.size());
    const auto params = static_cast<std::int64_t>(4 * (in.A_log.size() + in.dt_bias.size() + in.D.size()));
    const std::int64_t state = 2 * 4 * in.rows() * in.state_size;
    EXPECT_EQ(mamba_prefill_min_bytes({in.batch, in.channels, in.state_size}, 300, static_cast<int>(e)),
              e * tensors + params + state);
  }
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
