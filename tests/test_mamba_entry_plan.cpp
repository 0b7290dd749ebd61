// The planning of mamba's per-(channel, state entry) CUDA prefill (cuda_plan.hpp, the entry kernel of
// cuda_entry.cu), on the CPU: the threads cover every (row, entry) once per segment, the staging
// every (channel, token) and (token, entry) of a tile once, the shared arrays are disjoint, aligned
// and fit 4 blocks per SM on sm_80 and sm_90, the warps' shared reads and writes are conflict-free,
// the polynomial takes the same tokens in every lane, issue 39's cells get the segments the
// estimate in docs/gpu-guide.md assumes, and the scan_kernel option resolves, refuses and names.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/mamba/cuda_plan.hpp"
#include "mechanisms/mamba/options.hpp"
#include "mechanisms/registry.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

constexpr int kH200Sms = 132;

bool all_once(const std::vector<int>& touched) {
  return std::all_of(touched.begin(), touched.end(), [](int n) { return n == 1; });
}

// Banks touched by the 32-bit words [word, word + words) of each thread of one shared-memory
// wavefront: conflict-free when no bank holds two different words.
bool conflict_free(const std::vector<std::pair<int, int>>& accesses) {
  std::vector<std::set<int>> words_in_bank(32);
  for (const auto& [word, words] : accesses) {
    for (int w = word; w < word + words; ++w) words_in_bank[static_cast<std::size_t>(w % 32)].insert(w);
  }
  return std::all_of(words_in_bank.begin(), words_in_bank.end(), [](const std::set<int>& s) { return s.size() <= 1; });
}

TEST(MambaEntryPlan, ThreadsCoverEveryRowAndEntryOncePerSegment) {
  for (const std::int64_t n : {8, 16}) {
    for (const std::int64_t channels : {1, 15, 16, 17, 40, 512}) {
      for (const std::int64_t segments : {1, 3}) {
        const MambaShape shape{2, channels, n};
        const MambaPrefillPlan plan =
            split_mamba_prefill(plan_mamba_prefill(shape, 3000, 0, MambaScanKernel::entry), segments);
        const std::string where = "N " + std::to_string(n) + " d_inner " + std::to_string(channels);
        ASSERT_EQ(plan.segments, segments) << where;
        EXPECT_EQ(plan.threads, kMambaEntryThreads);
        EXPECT_EQ(plan.channels_per_block, kMambaEntryThreads / n);
        EXPECT_EQ(plan.blocks, 2 * plan.channel_groups * segments);
        std::vector<int> touched(static_cast<std::size_t>(shape.rows() * n * segments), 0);
        for (std::int64_t block = 0; block < plan.blocks; ++block) {
          const MambaScanRun run = mamba_scan_run(block, plan.channel_groups, plan.segments, plan.channels_per_block);
          for (int t = 0; t < plan.threads; ++t) {
            const MambaEntrySlot slot = mamba_entry_slot(static_cast<int>(n), t);
            // A channel's N lanes are one aligned group of the warp (the reduction stays in the warp).
            EXPECT_EQ(slot.channel_in_warp, (t % 32) / n);
            EXPECT_EQ(slot.channel, (t / 32) * (32 / n) + slot.channel_in_warp);
            const std::int64_t c = run.first_channel + slot.channel;
            if (c >= channels) continue;
            ++touched[static_cast<std::size_t>(((run.batch * channels + c) * n + slot.entry) * segments + run.segment)];
          }
        }
        EXPECT_TRUE(all_once(touched)) << where;
      }
    }
  }
}

// write_stage / load_stage: thread t stages (channel, token) elements t + 256 i and (token, entry)
// elements t + 256 i of a tile; together they cover each once.
TEST(MambaEntryPlan, StagingCoversEveryTileElementOnce) {
  for (const int n : {8, 16}) {
    const int channels = mamba_entry_channels_per_block(n);
    const int token_items = channels * kMambaEntryTile / kMambaEntryThreads;
    const int state_items = (kMambaEntryTile * n + kMambaEntryThreads - 1) / kMambaEntryThreads;
    EXPECT_EQ(token_items * kMambaEntryThreads, channels * kMambaEntryTile) << n;
    std::vector<int> pairs(static_cast<std::size_t>(channels * kMambaEntryTile), 0);
    std::vector<int> bc(static_cast<std::size_t>(kMambaEntryTile * n), 0);
    for (int t = 0; t < kMambaEntryThreads; ++t) {
      for (int i = 0; i < token_items; ++i) ++pairs[static_cast<std::size_t>(t + kMambaEntryThreads * i)];
      for (int i = 0; i < state_items; ++i) {
        const int e = t + kMambaEntryThreads * i;
        // Element e is token e / N, entry e % N: the tile's B rows are contiguous in global memory.
        if (e < kMambaEntryTile * n) ++bc[static_cast<std::size_t>((e % n) * kMambaEntryTile + e / n)];
      }
    }
    EXPECT_TRUE(all_once(pairs)) << n;
    EXPECT_TRUE(all_once(bc)) << n;
  }
}

// The regions (B/C tiles, {dt, du}, {D u, gate}, the warps' y arrays) are disjoint, 16-byte aligned
// where read as vectors, and 4 blocks fit an SM of sm_80 (164 KiB) and sm_90 (228 KiB) with the
// kernel's static 2 x 4 x channels bytes, each under 48 KiB (no opt-in).
TEST(MambaEntryPlan, SharedArraysAreDisjointAlignedAndFit) {
  for (const int n : {8, 16}) {
    const int channels = mamba_entry_channels_per_block(n);
    std::vector<int> owner(mamba_entry_shared_bytes(n) / sizeof(float), 0);
    auto mark = [&](int word) { ++owner.at(static_cast<std::size_t>(word)); };
    for (int tensor = 0; tensor < 2; ++tensor) {
      for (int s = 0; s < n; ++s) {
        EXPECT_EQ(mamba_entry_bc_index(n, tensor, s, 0) % 4, 0);
        for (int t = 0; t < kMambaEntryTile; ++t) mark(mamba_entry_bc_index(n, tensor, s, t));
      }
    }
    EXPECT_EQ(mamba_entry_pairs_offset(n) % 4, 0);
    EXPECT_EQ(mamba_entry_terms_offset(n) % 2, 0);
    EXPECT_EQ(mamba_entry_y_offset(n) % 4, 0);
    for (int w = 0; w < 2 * channels * kMambaEntryTile; ++w) mark(mamba_entry_pairs_offset(n) + w);
    for (int w = 0; w < 2 * channels * kMambaEntryTile; ++w) mark(mamba_entry_terms_offset(n) + w);
    for (int warp = 0; warp < kMambaEntryWarps; ++warp) {
      for (int lane = 0; lane < 32; ++lane) {
        const int k = lane / n, s = lane % n;
        EXPECT_EQ(mamba_entry_y_index(n, k, s, 0) % 4, 0);
        for (int t = 0; t < kMambaEntryTile; ++t) {
          const int word = mamba_entry_y_offset(n) + warp * kMambaEntryWarpYFloats + mamba_entry_y_index(n, k, s, t);
          ASSERT_LT(mamba_entry_y_index(n, k, s, t), kMambaEntryWarpYFloats);
          mark(word);
        }
      }
    }
    EXPECT_TRUE(std::all_of(owner.begin(), owner.end(), [](int c) { return c <= 1; })) << n;
    const std::size_t per_block = mamba_entry_shared_bytes(n) + 2 * sizeof(float) * static_cast<std::size_t>(channels);
    EXPECT_LE(per_block, std::size_t{48 * 1024}) << n;
    EXPECT_LE(kMambaEntryMinBlocksPerSm * (per_block + 1024), std::size_t{164 * 1024}) << n;  // + 1 KiB reserved per block
    std::printf("entry kernel, N %d: %zu bytes of shared memory per block (%zu dynamic)\n", n, per_block,
                mamba_entry_shared_bytes(n));
  }
  EXPECT_EQ(mamba_entry_shared_bytes(16), 28160u);
}

// The scan loop's 16-byte reads (a quarter-warp per wavefront) of B and C rows and of the {dt, du}
// pairs, the y array's 16-byte writes, the owners' 4-byte reads of one entry row (a whole warp per
// wavefront) and the 8-byte {dt, du} staging writes (a half-warp): no bank conflicts. Lanes reading
// the same word (the channels of a warp share B and C; a channel's lanes share its pairs) broadcast.
TEST(MambaEntryPlan, WarpAccessesToSharedMemoryAreConflictFree) {
  for (const int n : {8, 16}) {
    for (int quarter = 0; quarter < 4; ++quarter) {
      for (int t4 = 0; t4 < kMambaEntryTile; t4 += 4) {
        std::vector<std::pair<int, int>> b_reads, c_reads, pair_reads, y_writes;
        for (int lane = 8 * quarter; lane < 8 * quarter + 8; ++lane) {
          const MambaEntrySlot slot = mamba_entry_slot(n, lane);
          b_reads.push_back({mamba_entry_bc_index(n, 0, slot.entry, t4), 4});
          c_reads.push_back({mamba_entry_bc_index(n, 1, slot.entry, t4), 4});
          pair_reads.push_back({mamba_entry_pairs_offset(n) + slot.channel * 2 * kMambaEntryTile + 2 * t4, 4});
          y_writes.push_back({mamba_entry_y_index(n, slot.channel_in_warp, slot.entry, t4), 4});
        }
        EXPECT_TRUE(conflict_free(b_reads)) << n;
        EXPECT_TRUE(conflict_free(c_reads)) << n;
        EXPECT_TRUE(conflict_free(pair_reads)) << n;
        EXPECT_TRUE(conflict_free(y_writes)) << n;
      }
    }
    for (int q = 0; q < kMambaEntryTile / n; ++q) {
      for (int e = 0; e < n; ++e) {
        std::vector<std::pair<int, int>> y_reads;
        for (int lane = 0; lane < 32; ++lane) {
          const MambaEntrySlot slot = mamba_entry_slot(n, lane);
          y_reads.push_back({mamba_entry_y_index(n, slot.channel_in_warp, e, slot.entry + n * q), 1});
        }
        EXPECT_TRUE(conflict_free(y_reads)) << n;
      }
    }
    for (int half = 0; half < 2 * kMambaEntryWarps; ++half) {
      std::vector<std::pair<int, int>> pair_writes;
      for (int t = 16 * half; t < 16 * half + 16; ++t) pair_writes.push_back({mamba_entry_pairs_offset(n) + 2 * t, 2});
      EXPECT_TRUE(conflict_free(pair_writes)) << n;
    }
  }
}

TEST(MambaEntryPlan, PolynomialTokensAreThreeOfEachTile) {
  int count = 0;
  for (int t = 0; t < kMambaEntryTile; ++t) count += mamba_entry_polynomial_token(t) ? 1 : 0;
  EXPECT_EQ(count, kMambaEntryPolynomialTokens);
  EXPECT_TRUE(mamba_entry_polynomial_token(4));
  EXPECT_TRUE(mamba_entry_polynomial_token(9));
  EXPECT_TRUE(mamba_entry_polynomial_token(14));
  // Segments start on chunk edges, multiples of the tile: a token's place in its tile is token % 16.
  EXPECT_EQ(kMambaScanChunk % kMambaEntryTile, 0);
}

// Issue 39's cells on an H200: batch 16 fills the GPU without a split (512 blocks of 16 channels,
// one wave at 4 per SM), batch 1 splits L 8192 into 16 segments of 2 chunks.
TEST(MambaEntryPlan, Issue39CellsOnAnH200) {
  const MambaPrefillPlan b16 = plan_mamba_prefill({16, 512, 16}, 8192, kH200Sms, MambaScanKernel::entry);
  EXPECT_EQ(b16.channel_groups, 32);
  EXPECT_EQ(b16.blocks, 512);
  EXPECT_LE(b16.blocks, kMambaEntryMinBlocksPerSm * kH200Sms);
  EXPECT_EQ(b16.segments, 1);
  EXPECT_EQ(b16.shared_bytes, mamba_entry_shared_bytes(16));
  const MambaPrefillPlan b1 = plan_mamba_prefill({1, 512, 16}, 8192, kH200Sms, MambaScanKernel::entry);
  EXPECT_EQ(b1.segments, 16);
  EXPECT_EQ(b1.segment_tokens, 512);
  EXPECT_EQ(b1.blocks, 512);
  EXPECT_EQ(b1.map_blocks, 480);
  EXPECT_EQ(b1.workspace_floats, 512 * 16 * 17);
  // The bound a prediction counts: 32 one-chunk segments on 256 SMs.
  EXPECT_EQ(mamba_prefill_cuda_workspace_bytes({1, 512, 16}, 8192, MambaScanKernel::entry), 512 * 32 * 17 * 4);
  EXPECT_THROW(plan_mamba_prefill({1, 512, 17}, 8192, kH200Sms, MambaScanKernel::entry), std::invalid_argument);
}

// tests/gpu/test_mamba_gpu.cpp's batch-1 entry cell (d_inner 512, N 16, L 2048: 8 chunks, 32 row
// blocks) splits from 24 SMs on (3 segments of 3 chunks), so an H100 or H200 runs all three passes.
TEST(MambaEntryPlan, TheGpuTestsBatch1CellSplitsFrom24Sms) {
  EXPECT_EQ(plan_mamba_prefill({1, 512, 16}, 2048, 23, MambaScanKernel::entry).segments, 1);
  EXPECT_EQ(plan_mamba_prefill({1, 512, 16}, 2048, 24, MambaScanKernel::entry).segments, 3);
  EXPECT_GT(plan_mamba_prefill({1, 512, 16}, 2048, kH200Sms, MambaScanKernel::entry).segments, 1);
}

Cell mamba_cell(std::int64_t n, const std::string& kernel, Phase phase = Phase::prefill) {
  Cell cell = testing::mechanism_cell("mamba", 8, 64, 1024, DType::bfloat16, phase);
  cell.options.set("state_size", n);
  if (!kernel.empty()) cell.options.set("scan_kernel", kernel);
  return cell;
}

TEST(MambaEntryPlan, ScanKernelOptionResolvesRefusesAndNames) {
  const Mechanism* mamba = find_mechanism("mamba");
  ASSERT_NE(mamba, nullptr);
  // Declared, default auto.
  const std::vector<OptionSpec> specs = mamba->option_specs();
  ASSERT_TRUE(std::any_of(specs.begin(), specs.end(), [](const OptionSpec& s) { return s.key == "scan_kernel"; }));
  EXPECT_EQ(mamba_scan_kernel_option().text(MechanismOptions{}), "auto");
  // auto is the warp scan until a GPU run measures the kernels (cuda_plan.cpp says why).
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(16, "")), MambaScanKernel::lane);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(8, "auto")), MambaScanKernel::lane);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(16, "entry")), MambaScanKernel::entry);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(17, "auto")), MambaScanKernel::lane);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(64, "")), MambaScanKernel::lane);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(16, "lane")), MambaScanKernel::lane);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(16, "entry_mufu")), MambaScanKernel::entry_mufu);
  EXPECT_FALSE(mamba_scan_kernel_of(mamba_cell(32, "entry")));
  EXPECT_FALSE(mamba_cuda_unsupported(mamba_cell(16, "entry")));
  EXPECT_FALSE(mamba_cuda_unsupported(mamba_cell(32, "lane")));
  const std::optional<std::string> refused = mamba_cuda_unsupported(mamba_cell(32, "entry"));
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("scan_kernel"), std::string::npos) << *refused;
  // What a row's gpu_kernel records.
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(16, "entry")), "prefill entry (N 16, exp2 3/16 polynomial)");
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(16, "")), "prefill lane (warp scan)");
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(8, "entry_mufu")), "prefill entry_mufu (N 8)");
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(17, "")), "prefill lane (warp scan)");
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(16, "lane", Phase::decode)), "decode (context prefill lane (warp scan))");
}

}  // namespace
}  // namespace arch_bench
