// mamba CUDA launch planning, on the CPU: the decode groups cover every (row, state entry) once and
// never straddle a warp, the scan's warps cover every (batch, channel) and its lanes every token of
// a chunk once, the shared tiles are whole aligned vectors, conflict-free to stage, and fit without
// opt-in; the least bytes of a prefill count every tensor once. The split of the sequence at small
// batch: how many segments at batch 1 and 16, ragged and short sequences, the grid within one wave
// and the CUDA limits, and every (row, segment) and chunk covered once by each pass; the workspace
// a cell's predicted peak counts bounds what any device's plan allocates.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "mechanisms/common/cuda_launch_limits.hpp"
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

// The kernel's vector staging: the block's threads take every token of the chunk once, and the 32
// threads of a warp write each fp32 tile row to 32 distinct banks.
TEST(MambaCudaPlan, VectorStagingCoversEveryTokenOnceWithConflictFreeWrites) {
  std::vector<int> touched(kMambaScanChunk, 0);
  for (int thread = 0; thread < kMambaScanThreads; ++thread) {
    const int token = mamba_stage_token(thread);
    ASSERT_GE(token, 0);
    ASSERT_LT(token, kMambaScanChunk);
    ++touched[static_cast<std::size_t>(token)];
  }
  EXPECT_TRUE(all_once(touched));
  for (int warp = 0; warp < kMambaScanWarps; ++warp) {
    for (int g = 0; g < kMambaScanStateGroup; ++g) {
      std::set<int> banks;
      for (int j = 0; j < 32; ++j) banks.insert(mamba_tile_index(4, g, mamba_stage_token(32 * warp + j)) % 32);
      EXPECT_EQ(banks.size(), 32u) << "warp " << warp << " row " << g;
    }
  }
}

TEST(MambaCudaPlan, SharedMemoryFitsForEveryStateSizeAndDtype) {
  for (const std::int64_t n : {1, 16, 256}) {
    const MambaPrefillPlan plan = plan_mamba_prefill({1, 8, n}, 100);
    EXPECT_EQ(plan.shared_bytes, mamba_scan_shared_bytes(4, static_cast<int>(n)));
    EXPECT_GE(plan.shared_bytes, mamba_scan_shared_bytes(2, static_cast<int>(n)));  // bf16 tiles are smaller
    EXPECT_LE(plan.shared_bytes, kSharedWithoutOptIn) << n;
    // fp32 B and C tiles, and {h, A log2 e} per warp and entry.
    EXPECT_GE(plan.shared_bytes, 2 * kMambaScanStateGroup * kMambaScanChunk * 4 + kMambaScanWarps * n * 8);
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

constexpr int kH200Sms = 132;

// Issue 39's cells: d_inner 512 (64 blocks of 8 channels) at L 8192 (32 chunks) on 132 SMs.
TEST(MambaCudaPlan, SplitsTheSequenceAtBatch1AndNotAtBatch16) {
  const MambaPrefillPlan b1 = plan_mamba_prefill({1, 512, 16}, 8192, kH200Sms);
  EXPECT_EQ(b1.segments, 4);  // floor(2 x 132 / 64): 256 blocks, one wave of two per SM
  EXPECT_EQ(b1.segment_tokens, 2048);
  EXPECT_EQ(b1.blocks, 256);
  EXPECT_EQ(b1.map_blocks, 192);  // the last segment needs no map
  EXPECT_EQ(b1.combine_blocks, 512 * 16 / kMambaCombineThreads);
  EXPECT_EQ(b1.workspace_floats, 512 * 4 * 17);
  EXPECT_LE(b1.blocks, kMambaScanMinBlocksPerSm * kH200Sms);
  // Batch 16: 1024 blocks already fill the GPU.
  const MambaPrefillPlan b16 = plan_mamba_prefill({16, 512, 16}, 8192, kH200Sms);
  EXPECT_EQ(b16.segments, 1);
  EXPECT_EQ(b16.blocks, 1024);
  EXPECT_EQ(b16.map_blocks, 0);
  EXPECT_EQ(b16.workspace_floats, 0);
  EXPECT_GE(b16.segment_tokens, 8192);
  // Without the SM count (the unsupported check, the CPU tests): never split.
  EXPECT_EQ(plan_mamba_prefill({1, 512, 16}, 8192).segments, 1);
  EXPECT_EQ(plan_mamba_prefill({1, 512, 16}, 8192, 0).segments, 1);
  // Batch 2 (128 blocks, one per SM): two segments would walk 2 x 16 chunks, no shorter than 32.
  EXPECT_EQ(plan_mamba_prefill({2, 512, 16}, 8192, kH200Sms).segments, 1);
  // d_inner 256 at batch 1: 32 blocks, 8 segments of 4 chunks.
  EXPECT_EQ(plan_mamba_prefill({1, 256, 16}, 8192, kH200Sms).segments, 8);
}

TEST(MambaCudaPlan, ShortAndRaggedSequences) {
  // Shorter than one chunk, or one chunk: nothing to split.
  for (const std::int64_t tokens : {0, 1, 100, 255, 256}) {
    const MambaPrefillPlan plan = plan_mamba_prefill({1, 512, 16}, tokens, kH200Sms);
    EXPECT_EQ(plan.segments, 1) << tokens;
    EXPECT_EQ(plan.workspace_floats, 0) << tokens;
  }
  // Two chunks: the two walks of a 1-chunk segment are as long as the unsplit one.
  EXPECT_EQ(plan_mamba_prefill({1, 512, 16}, 512, kH200Sms).segments, 1);
  // Three chunks: three 1-chunk segments, the last 232 tokens.
  const MambaPrefillPlan three = plan_mamba_prefill({1, 512, 16}, 744, kH200Sms);
  EXPECT_EQ(three.segments, 3);
  EXPECT_EQ(three.segment_tokens, 256);
  // L 8000 (31.25 chunks): 4 segments of 8 chunks, the last 1856 tokens.
  const MambaPrefillPlan ragged = plan_mamba_prefill({1, 512, 16}, 8000, kH200Sms);
  EXPECT_EQ(ragged.chunks, 32);
  EXPECT_EQ(ragged.segments, 4);
  EXPECT_EQ(ragged.segment_tokens, 2048);
  EXPECT_EQ(8000 - 3 * ragged.segment_tokens, 1856);
  // Asking for more segments than make whole, non-empty ones: 4 chunks in 3 asked are 2 of 2.
  const MambaPrefillPlan asked = split_mamba_prefill(plan_mamba_prefill({1, 8, 16}, 1000), 3);
  EXPECT_EQ(asked.segments, 2);
  EXPECT_EQ(asked.segment_tokens, 512);
  EXPECT_EQ(split_mamba_prefill(plan_mamba_prefill({1, 8, 16}, 1000), 99).segments, 4);
  EXPECT_EQ(split_mamba_prefill(plan_mamba_prefill({1, 8, 16}, 100), 5).segments, 1);
  EXPECT_EQ(split_mamba_prefill(plan_mamba_prefill({1, 8, 16}, 0), 5).segments, 1);
}

// Over batches, widths, lengths and SM counts: a split plan's segments are whole chunks, none empty,
// its grids within one wave and the CUDA limits, worth its second walk, and each pass covers its
// (row, segment) pairs once with distinct workspace slots.
TEST(MambaCudaPlan, SplitPlansCoverEveryRowSegmentAndChunkOnce) {
  int split_plans = 0;
  for (const int sms : {1, 8, 66, 132, 144}) {
    for (const std::int64_t batch : {1, 2, 3}) {
      for (const std::int64_t channels : {1, 9, 64, 512}) {
        for (const std::int64_t tokens : {1, 256, 257, 768, 1000, 3000, 8192}) {
          const MambaShape shape{batch, channels, 5};
          const MambaPrefillPlan plan = plan_mamba_prefill(shape, tokens, sms);
          const std::string where = std::to_string(sms) + " SMs, B " + std::to_string(batch) + ", d_inner " +
                                    std::to_string(channels) + ", L " + std::to_string(tokens);
          EXPECT_EQ(plan.segment_tokens % kMambaScanChunk, 0) << where;
          EXPECT_GE(plan.segments * plan.segment_tokens, tokens) << where;
          EXPECT_LT((plan.segments - 1) * plan.segment_tokens, std::max<std::int64_t>(tokens, 1)) << where;  // none empty
          EXPECT_LE(plan.blocks, kCudaMaxGridX) << where;
          EXPECT_EQ(plan.blocks, batch * plan.channel_groups * plan.segments) << where;
          if (plan.segments == 1) {
            EXPECT_EQ(plan.map_blocks + plan.combine_blocks + plan.workspace_floats, 0) << where;
            continue;
          }
          ++split_plans;
          EXPECT_LE(plan.blocks, kMambaScanMinBlocksPerSm * sms) << where;
          EXPECT_LT(2 * (plan.segment_tokens / kMambaScanChunk), plan.chunks) << where;
          EXPECT_GE(plan.combine_blocks * kMambaCombineThreads, shape.rows() * shape.state_size) << where;
          // Pass 1 (segments 0 .. S - 2) and pass 3 (all): every (row, segment) once.
          for (const bool maps : {true, false}) {
            const std::int64_t grid_segments = maps ? plan.segments - 1 : plan.segments;
            std::vector<int> touched(static_cast<std::size_t>(shape.rows() * plan.segments), 0);
            for (std::int64_t block = 0; block < (maps ? plan.map_blocks : plan.blocks); ++block) {
              const MambaScanRun run = mamba_scan_run(block, plan.channel_groups, grid_segments);
              ASSERT_LT(run.batch, batch) << where;
              ASSERT_LT(run.segment, grid_segments) << where;
              for (int warp = 0; warp < kMambaScanWarps; ++warp) {
                const std::int64_t c = run.first_channel + warp;
                if (c < channels) ++touched[static_cast<std::size_t>((run.batch * channels + c) * plan.segments + run.segment)];
              }
            }
            for (std::int64_t r = 0; r < shape.rows(); ++r) {
              for (std::int64_t k = 0; k < plan.segments; ++k) {
                const int expected = maps && k == plan.segments - 1 ? 0 : 1;
                EXPECT_EQ(touched[static_cast<std::size_t>(r * plan.segments + k)], expected) << where;
              }
            }
          }
          // The workspace slots: the h of every (row, segment, entry) and the dt sum of every
          // (row, segment), distinct, filling workspace_floats.
          std::vector<int> slots(static_cast<std::size_t>(plan.workspace_floats), 0);
          for (std::int64_t r = 0; r < shape.rows(); ++r) {
            for (std::int64_t k = 0; k < plan.segments; ++k) {
              for (int s = 0; s < plan.state_size; ++s) ++slots[static_cast<std::size_t>(mamba_segment_state_index(plan, r, k, s))];
              ++slots[static_cast<std::size_t>(mamba_segment_dt_index(plan, r, k))];
            }
          }
          EXPECT_TRUE(all_once(slots)) << where;
        }
      }
    }
  }
  EXPECT_GT(split_plans, 50);
}

// The device workspace a cell's prediction counts (mamba_prefill_cuda_workspace_bytes) is what the
// CUDA cells allocate (mamba_prefill_workspace_bytes of the device's plan) on a device of
// kMambaSplitMaxMultiprocessors SMs or more, and never less than it on any device; the mechanism's
// predicted peak of a prefill cell includes it.
TEST(MambaCudaPlan, PredictedPeakCountsTheWorkspaceAnyDeviceAllocates) {
  // Issue 39's batch-1 cell: 512 rows x 4 segments x (16 + 1) floats on an H200.
  const MambaShape b1{1, 512, 16};
  EXPECT_EQ(mamba_prefill_workspace_bytes(plan_mamba_prefill(b1, 8192, kH200Sms)), 139264);
  EXPECT_EQ(mamba_prefill_cuda_workspace_bytes(b1, 8192), 512 * 8 * 17 * 4);  // 8 segments at 256 SMs
  EXPECT_EQ(mamba_prefill_cuda_workspace_bytes({16, 512, 16}, 8192), 0);      // never split
  for (const MambaShape shape : {MambaShape{1, 512, 16}, MambaShape{1, 9, 5}, MambaShape{2, 64, 256}, MambaShape{3, 1, 1}}) {
    for (const std::int64_t tokens : {0, 300, 744, 8000, 65536}) {
      const std::int64_t bound = mamba_prefill_cuda_workspace_bytes(shape, tokens);
      std::int64_t previous = 0;
      for (int sms = 0; sms <= 2 * kMambaSplitMaxMultiprocessors; sms += 7) {
        const std::int64_t bytes = mamba_prefill_workspace_bytes(plan_mamba_prefill(shape, tokens, sms));
        EXPECT_LE(bytes, bound) << sms << " SMs, L " << tokens;
        EXPECT_GE(bytes, previous) << sms << " SMs, L " << tokens;  // more SMs, never fewer segments
        previous = bytes;
      }
      EXPECT_EQ(mamba_prefill_workspace_bytes(plan_mamba_prefill(shape, tokens, 1000)), bound) << tokens;
    }
  }
  const Mechanism* mamba = find_mechanism("mamba");
  ASSERT_NE(mamba, nullptr);
  Cell prefill = testing::mechanism_cell("mamba", 8, 64, 8192, DType::bfloat16, Phase::prefill, 1);
  prefill.options.set("state_size", std::int64_t{16});
  const std::int64_t tensors = 4 * 512 * 8192 * 2 + 2 * 8192 * 16 * 2;  // u, dt_raw, z, out; B, C
  const std::int64_t fixed = 512 * 16 * 4 + (512 * 16 + 2 * 512) * 4;  // h; A, dt_bias, D
  EXPECT_GE(mamba->predicted_peak_bytes(prefill), tensors + fixed + mamba_prefill_cuda_workspace_bytes(b1, 8192));
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
