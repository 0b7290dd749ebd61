// The planning of mamba's per-(channel, state entry) CUDA prefill (cuda_plan.hpp, the entry kernel of
// cuda_entry.cu), on the CPU: the threads cover every (row, entry) once per segment, 4 entries a
// thread, the transpose-reduce leaves each lane one token's whole sum, the staging every (channel,
// token) and (token, entry) of a tile once, the shared arrays are disjoint, aligned and fit the
// __launch_bounds__' blocks per SM on sm_80 and sm_90, the warps' shared reads and writes are conflict-free,
// segments start on tile edges, issue 39's cells get the segments the estimate in
// docs/gpu-guide.md assumes, and the scan_kernel option resolves, refuses and names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
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

TEST(MambaEntryPlan, ThreadsCoverEveryRowAndEntryOncePerSegment) {
  for (const std::int64_t n : {8, 16}) {
    for (const std::int64_t channels : {1, 31, 32, 33, 40, 512}) {
      for (const std::int64_t segments : {1, 3}) {
        const MambaShape shape{2, channels, n};
        const MambaPrefillPlan plan =
            split_mamba_prefill(plan_mamba_prefill(shape, 3000, 0, MambaScanKernel::entry), segments);
        const std::string where = "N " + std::to_string(n) + " d_inner " + std::to_string(channels);
        const int lanes = static_cast<int>(n) / kMambaEntryEntriesPerThread;
        ASSERT_EQ(plan.segments, segments) << where;
        EXPECT_EQ(lanes, mamba_entry_lanes_per_channel(static_cast<int>(n)));
        EXPECT_EQ(plan.threads, 32 * lanes);  // 128 at N 16, 64 at N 8: whole warps
        EXPECT_EQ(plan.threads % 32, 0);
        EXPECT_EQ(plan.channels_per_block, 32);
        EXPECT_EQ(plan.blocks, 2 * plan.channel_groups * segments);
        std::vector<int> touched(static_cast<std::size_t>(shape.rows() * n * segments), 0);
        for (std::int64_t block = 0; block < plan.blocks; ++block) {
          const MambaScanRun run = mamba_scan_run(block, plan.channel_groups, plan.segments, plan.channels_per_block);
          for (int t = 0; t < plan.threads; ++t) {
            const MambaEntrySlot slot = mamba_entry_slot(static_cast<int>(n), t);
            // A channel's L lanes are one aligned group of a warp (the shuffles stay in the warp,
            // partners lane ^ 2 and lane ^ 1 in the channel).
            EXPECT_EQ(slot.lane, t % lanes);
            EXPECT_EQ((t % 32) / lanes, slot.channel % (32 / lanes));
            for (int half = lanes / 2; half >= 1; half /= 2) {
              EXPECT_EQ(mamba_entry_slot(static_cast<int>(n), t ^ half).channel, slot.channel);
            }
            const std::int64_t c = run.first_channel + slot.channel;
            if (c >= channels) continue;
            for (int i = 0; i < kMambaEntryEntriesPerThread; ++i) {
              const std::int64_t s = kMambaEntryEntriesPerThread * slot.lane + i;
              ++touched[static_cast<std::size_t>(((run.batch * channels + c) * n + s) * segments + run.segment)];
            }
          }
        }
        EXPECT_TRUE(all_once(touched)) << where;
      }
    }
  }
}

// The transpose-reduce (cuda_entry.cu, entry_reduce) simulated over a channel's L lanes: lane j
// ends with the whole sum of token j of the group (mamba_entry_owned_token), every lane's partial of
// that token in it once, summed as (p_0 + p_2) + (p_1 + p_3) at L 4; a group's tokens are owned once.
TEST(MambaEntryPlan, TheTransposeReduceLeavesLaneJWithTokenJ) {
  for (const int n : {8, 16}) {
    const int lanes = mamba_entry_lanes_per_channel(n);
    // part[lane][token]: the set of (lane, token) partials a register holds, as bit masks.
    std::vector<std::vector<std::uint32_t>> part(static_cast<std::size_t>(lanes),
                                                 std::vector<std::uint32_t>(static_cast<std::size_t>(lanes)));
    for (int l = 0; l < lanes; ++l) {
      for (int q = 0; q < lanes; ++q) part[l][q] = 1u << (l * lanes + q);
    }
    for (int half = lanes / 2; half >= 1; half /= 2) {
      const auto before = part;
      for (int l = 0; l < lanes; ++l) {
        const bool upper = (l & half) != 0;
        const int partner = l ^ half;
        const bool partner_upper = (partner & half) != 0;
        for (int i = 0; i < half; ++i) {
          const std::uint32_t keep = upper ? before[l][half + i] : before[l][i];
          const std::uint32_t sent = partner_upper ? before[partner][i] : before[partner][half + i];
          EXPECT_EQ(keep & sent, 0u);
          part[l][i] = keep | sent;
        }
      }
    }
    std::vector<int> owned(static_cast<std::size_t>(kMambaEntryTile), 0);
    for (int l = 0; l < lanes; ++l) {
      const int token = mamba_entry_owned_token(n, l, 0);
      EXPECT_EQ(token, l);
      std::uint32_t want = 0;
      for (int k = 0; k < lanes; ++k) want |= 1u << (k * lanes + token);
      EXPECT_EQ(part[l][0], want) << "N " << n << " lane " << l;
      for (int g = 0; g < kMambaEntryTile / lanes; ++g) ++owned[static_cast<std::size_t>(mamba_entry_owned_token(n, l, g))];
    }
    EXPECT_TRUE(all_once(owned)) << n;
  }
}

// The regions (B/C tiles, {dt, du}, {D u, gate}) are disjoint, 16-byte aligned where read as
// vectors, and mamba_entry_min_blocks_per_sm blocks fit an SM of sm_80 (164 KiB) and sm_90
// (228 KiB) with the kernel's static 2 x 4 x channels bytes, each under 48 KiB (no opt-in).
TEST(MambaEntryPlan, SharedArraysAreDisjointAlignedAndFit) {
  for (const int n : {8, 16}) {
    const int channels = mamba_entry_channels_per_block(n);
    std::vector<int> owner(mamba_entry_shared_bytes(n) / sizeof(float), 0);
    auto mark = [&](int word) { ++owner.at(static_cast<std::size_t>(word)); };
    for (int tensor = 0; tensor < 2; ++tensor) {
      for (int t = 0; t < kMambaEntryTile; ++t) {
        for (int s = 0; s < n; ++s) {
          if (s % kMambaEntryEntriesPerThread == 0) {
            EXPECT_EQ(mamba_entry_bc_index(n, tensor, t, s) % 4, 0);
          }
          mark(mamba_entry_bc_index(n, tensor, t, s));
        }
      }
    }
    for (int ch = 0; ch < channels; ++ch) {
      // Pairs are read 2 tokens (16 bytes) at a time, terms one token (8 bytes).
      for (int t = 0; t < kMambaEntryTile; ++t) {
        if (t % 2 == 0) {
          EXPECT_EQ(mamba_entry_pair_index(n, ch, t) % 4, 0);
        }
        EXPECT_EQ(mamba_entry_term_index(n, ch, t) % 2, 0);
        for (int w = 0; w < 2; ++w) {
          mark(mamba_entry_pair_index(n, ch, t) + w);
          mark(mamba_entry_term_index(n, ch, t) + w);
        }
      }
    }
    // The two raw stages after the fp32 arrays (fp32 storage, the plan's bound), 16-byte aligned
    // in both dtypes, and each 16-byte vector of a stage whole in it.
    ASSERT_EQ(mamba_entry_raw_offset_bytes(n) % 16, 0u);
    for (const int bytes : {2, 4}) {
      EXPECT_EQ(mamba_entry_raw_stage_bytes(n, bytes) % 16, 0u) << n;
      EXPECT_EQ(mamba_entry_raw_bc_index(n, 0, 0) * bytes % 16, 0) << n;
      EXPECT_EQ(mamba_entry_raw_stage_elements(n) * bytes % 16, 0) << n;
    }
    const int raw_word = static_cast<int>(mamba_entry_raw_offset_bytes(n) / sizeof(float));
    for (int stage = 0; stage < 2; ++stage) {
      for (int e = 0; e < mamba_entry_raw_stage_elements(n); ++e) mark(raw_word + stage * mamba_entry_raw_stage_elements(n) + e);
    }
    EXPECT_TRUE(std::all_of(owner.begin(), owner.end(), [](int c) { return c <= 1; })) << n;  // disjoint
    // The raw layout: u, dt_raw, z rows, then B, C, each element once.
    std::vector<int> raw(static_cast<std::size_t>(mamba_entry_raw_stage_elements(n)), 0);
    for (int tensor = 0; tensor < 3; ++tensor) {
      for (int ch = 0; ch < channels; ++ch) {
        for (int t = 0; t < kMambaEntryTile; ++t) ++raw.at(static_cast<std::size_t>(mamba_entry_raw_index(tensor, ch, t)));
      }
    }
    for (int tensor = 0; tensor < 2; ++tensor) {
      for (int e = 0; e < kMambaEntryTile * n; ++e) ++raw.at(static_cast<std::size_t>(mamba_entry_raw_bc_index(n, tensor, e)));
    }
    EXPECT_TRUE(all_once(raw)) << n;
    // The kernel launches with its dtype's bytes (no static shared memory: dt_bias and D sit in
    // registers); under 48 KiB (no opt-in); the __launch_bounds__' blocks fit an sm_90 SM (228 KiB)
    // in both dtypes and an sm_80 SM (164 KiB) in bf16 (fp32 at N 8: 6 of 8), + 1 KiB reserved a block.
    for (const int bytes : {2, 4}) {
      const std::size_t per_block = mamba_entry_shared_bytes(n, bytes);
      const std::size_t blocks = static_cast<std::size_t>(mamba_entry_min_blocks_per_sm(n));
      EXPECT_LE(per_block, std::size_t{48 * 1024}) << n;
      EXPECT_LE(per_block, mamba_entry_shared_bytes(n));
      EXPECT_LE(blocks * (per_block + 1024), std::size_t{228 * 1024}) << n << " " << bytes;
      if (bytes == 2 || n == 16) {
        EXPECT_LE(blocks * (per_block + 1024), std::size_t{164 * 1024}) << n << " " << bytes;
      }
      std::printf("entry kernel, N %d, %d-byte storage: %zu bytes of shared memory per block, %zu blocks per SM\n", n,
                  bytes, per_block, blocks);
    }
    EXPECT_EQ(mamba_entry_min_blocks_per_sm(n) * mamba_entry_threads(n), 32 * kMambaEntryWarpsPerSm);
  }
  EXPECT_EQ(mamba_entry_shared_bytes(16, 2), 20480u);
  EXPECT_EQ(mamba_entry_shared_bytes(16, 4), 28672u);
  EXPECT_EQ(mamba_entry_shared_bytes(8, 2), 17408u);
  EXPECT_EQ(mamba_entry_shared_bytes(8, 4), 24576u);
}

// Shared-memory wavefronts of one warp-wide access of `bytes` per lane (4: the whole warp at once;
// 8: each half-warp; 16: each quarter-warp): the most distinct words any bank holds in a phase,
// summed over the phases' worst; one per phase is conflict-free. `word_of(lane, k)` is the word of
// the lane's k-th 4-byte piece.
template <class WordOf>
int phases_worst(int bytes, const WordOf& word_of) {
  const int lanes_per_phase = 128 / bytes, pieces = bytes / 4;
  int worst = 0;
  for (int first = 0; first < 32; first += lanes_per_phase) {
    std::vector<std::pair<int, int>> accesses;
    for (int lane = first; lane < first + lanes_per_phase; ++lane) accesses.push_back({word_of(lane, 0), pieces});
    std::vector<std::set<int>> words_in_bank(32);
    for (const auto& [word, words] : accesses) {
      for (int w = word; w < word + words; ++w) words_in_bank[static_cast<std::size_t>(w % 32)].insert(w);
    }
    for (const auto& bank : words_in_bank) worst = std::max(worst, static_cast<int>(bank.size()));
  }
  return worst;
}

// Every shared access of the kernel, per warp: no bank conflicts (lanes reading the same word
// broadcast: a warp's channels share B and C, a channel's lanes its pairs), but for one: the
// staging's 16-byte {dt, du} and {D u, silu z} stores at N 16 are 2-way (a quarter-warp is 2
// channels x 4 lanes, whose rows 40 words apart start 8 banks apart, where a stride of 4 mod 8
// would interleave them; the owners' term reads need the rows a multiple of 8 banks apart, so no
// padding serves both), and so are fp32's raw row reads at N 8 (two 16-byte reads of a 32-byte
// row: a quarter-warp's lanes 32 bytes apart, lanes 0 and 4 on one bank). They are 4 (6) of a
// thread's 650 (838) instructions a tile, and a conflict costs a wavefront, not an issue slot.
TEST(MambaEntryPlan, WarpAccessesToSharedMemoryAreConflictFree) {
  for (const int n : {8, 16}) {
    const int lanes = mamba_entry_lanes_per_channel(n), threads = mamba_entry_threads(n);
    const int staged = mamba_entry_staged_tokens(n);
    for (int warp = 0; warp < threads / 32; ++warp) {
      auto slot_of = [&](int lane) { return mamba_entry_slot(n, 32 * warp + lane); };
      const std::string where = "N " + std::to_string(n) + " warp " + std::to_string(warp);
      // The scan: per token a lane's 4 B and 4 C entries (16 bytes), its channel's pairs of 2 tokens.
      for (int t = 0; t < kMambaEntryTile; ++t) {
        for (int tensor = 0; tensor < 2; ++tensor) {
          EXPECT_EQ(phases_worst(16, [&](int lane, int) {
                      return mamba_entry_bc_index(n, tensor, t, kMambaEntryEntriesPerThread * slot_of(lane).lane);
                    }), 1) << where;
        }
        EXPECT_EQ(phases_worst(16, [&](int lane, int) { return mamba_entry_pair_index(n, slot_of(lane).channel, t - t % 2); }),
                  1) << where;
      }
      // The owners' {D u, silu z} of token g L + j (8 bytes).
      for (int g = 0; g < kMambaEntryTile / lanes; ++g) {
        EXPECT_EQ(phases_worst(8, [&](int lane, int) {
                    return mamba_entry_term_index(n, slot_of(lane).channel, mamba_entry_owned_token(n, slot_of(lane).lane, g));
                  }), 1) << where;
      }
      // The staging, in both storage dtypes: the raw rows of u, dt_raw, z (16 / L elements of the
      // lane's channel, one 8- or 16-byte read, or two 16-byte reads for fp32 at N 8), the 4 B or C
      // elements a lane widens and its 16-byte fp32 write, the 16-byte pair and term writes.
      for (const int bytes : {2, 4}) {
        const int raw_word = static_cast<int>(mamba_entry_raw_offset_bytes(n) / 4);
        const int row_bytes = staged * bytes, read_bytes = std::min(row_bytes, 16);
        for (int tensor = 0; tensor < 3; ++tensor) {
          for (int part = 0; part < row_bytes / read_bytes; ++part) {
            EXPECT_EQ(phases_worst(read_bytes, [&](int lane, int) {
                        const MambaEntrySlot sl = slot_of(lane);
                        return raw_word + (mamba_entry_raw_index(tensor, sl.channel, staged * sl.lane) * bytes + 16 * part) / 4;
                      }), row_bytes > 16 ? 2 : 1) << where << " raw row " << tensor << " bytes " << bytes;
          }
        }
        auto widened = [&](int lane) { return mamba_entry_widened_element(n, 32 * warp + lane); };
        auto widened_tensor = [&](int lane) { return (32 * warp + lane) / (threads / 2); };
        EXPECT_EQ(phases_worst(4 * bytes, [&](int lane, int) {
                    return raw_word + mamba_entry_raw_bc_index(n, widened_tensor(lane), widened(lane)) * bytes / 4;
                  }), 1) << where << " raw B, C bytes " << bytes;
        EXPECT_EQ(phases_worst(16, [&](int lane, int) {
                    const int e = widened(lane);
                    return mamba_entry_bc_index(n, widened_tensor(lane), e / n, e % n);
                  }), 1) << where;
      }
      for (int k = 0; k < staged; k += 2) {
        const int expected = n == 16 ? 2 : 1;
        EXPECT_EQ(phases_worst(16, [&](int lane, int) {
                    return mamba_entry_pair_index(n, slot_of(lane).channel, staged * slot_of(lane).lane + k);
                  }), expected) << where;
        EXPECT_EQ(phases_worst(16, [&](int lane, int) {
                    return mamba_entry_term_index(n, slot_of(lane).channel, staged * slot_of(lane).lane + k);
                  }), expected) << where;
      }
    }
  }
}

// The staging covers the tile: lane j of each channel stages tokens (16 / L) j .. of its own
// channel, the widening threads every B and C element once, and the cp.async vectors (16 bytes,
// consecutive in the stage) every raw element once, in both dtypes.
TEST(MambaEntryPlan, StagingCoversEveryTileElementOnce) {
  for (const int n : {8, 16}) {
    const int channels = mamba_entry_channels_per_block(n), threads = mamba_entry_threads(n);
    std::vector<int> pairs(static_cast<std::size_t>(channels * kMambaEntryTile), 0);
    std::vector<int> bc(static_cast<std::size_t>(2 * kMambaEntryTile * n), 0);
    for (int t = 0; t < threads; ++t) {
      const MambaEntrySlot slot = mamba_entry_slot(n, t);
      for (int k = 0; k < mamba_entry_staged_tokens(n); ++k) {
        ++pairs[static_cast<std::size_t>(slot.channel * kMambaEntryTile + mamba_entry_staged_tokens(n) * slot.lane + k)];
      }
      const int tensor = t / (threads / 2), e = mamba_entry_widened_element(n, t);
      for (int k = 0; k < 4; ++k) ++bc[static_cast<std::size_t>(tensor * kMambaEntryTile * n + e + k)];
    }
    EXPECT_TRUE(all_once(pairs)) << n;
    EXPECT_TRUE(all_once(bc)) << n;
    for (const int bytes : {2, 4}) {
      const int per_vector = 16 / bytes, vectors = mamba_entry_raw_stage_elements(n) / per_vector;
      EXPECT_EQ(vectors * per_vector, mamba_entry_raw_stage_elements(n));
      // A vector never straddles two rows (u, dt_raw, z rows of 16 tokens; B, C of 16 N elements).
      EXPECT_EQ(kMambaEntryTile % per_vector, 0);
      EXPECT_EQ(kMambaEntryRawTokenElements % per_vector, 0);
      std::vector<int> raw(static_cast<std::size_t>(mamba_entry_raw_stage_elements(n)), 0);
      for (int v = 0; v < vectors; ++v) {
        for (int k = 0; k < per_vector; ++k) ++raw[static_cast<std::size_t>(v * per_vector + k)];
      }
      EXPECT_TRUE(all_once(raw)) << n;
    }
  }
}

// Segments start on chunk edges, multiples of the tile, so a token's place in its tile (the
// replay's tile token, as in the kernel) is token % 16.
TEST(MambaEntryPlan, SegmentsStartOnTileEdges) { EXPECT_EQ(kMambaScanChunk % kMambaEntryTile, 0); }

// Issue 39's cells on an H200: batch 16 runs unsplit (256 blocks of 32 channels, about 2 per SM,
// the split's planning count), batch 1 splits L 8192 into 16 segments of 2 chunks.
TEST(MambaEntryPlan, Issue39CellsOnAnH200) {
  const MambaPrefillPlan b16 = plan_mamba_prefill({16, 512, 16}, 8192, kH200Sms, MambaScanKernel::entry);
  EXPECT_EQ(b16.channel_groups, 16);
  EXPECT_EQ(b16.blocks, 256);
  EXPECT_EQ(b16.threads, 128);
  EXPECT_LE(b16.blocks, mamba_entry_min_blocks_per_sm(16) * kH200Sms);  // one wave
  EXPECT_EQ(b16.segments, 1);
  EXPECT_EQ(b16.shared_bytes, mamba_entry_shared_bytes(16));
  const MambaPrefillPlan b1 = plan_mamba_prefill({1, 512, 16}, 8192, kH200Sms, MambaScanKernel::entry);
  EXPECT_EQ(b1.segments, 16);
  EXPECT_EQ(b1.segment_tokens, 512);
  EXPECT_EQ(b1.blocks, 256);
  EXPECT_EQ(b1.map_blocks, 240);
  EXPECT_EQ(b1.workspace_floats, 512 * 16 * 17);
  // The bound a prediction counts: 32 one-chunk segments on 256 SMs.
  EXPECT_EQ(mamba_prefill_cuda_workspace_bytes({1, 512, 16}, 8192, MambaScanKernel::entry), 512 * 32 * 17 * 4);
  // N 8: 64-thread blocks of 32 channels, the same grids.
  const MambaPrefillPlan n8 = plan_mamba_prefill({16, 512, 8}, 8192, kH200Sms, MambaScanKernel::entry);
  EXPECT_EQ(n8.threads, 64);
  EXPECT_EQ(n8.blocks, 256);
  EXPECT_EQ(n8.segments, 1);
  EXPECT_EQ(plan_mamba_prefill({1, 512, 8}, 8192, kH200Sms, MambaScanKernel::entry).segments, 16);
  EXPECT_THROW(plan_mamba_prefill({1, 512, 17}, 8192, kH200Sms, MambaScanKernel::entry), std::invalid_argument);
}

// tests/gpu/test_mamba_gpu.cpp's batch-1 entry cell (d_inner 512, N 16, L 2048: 8 chunks, 16 row
// blocks, planned at 2 per SM) splits from 24 SMs on (3 segments of 3 chunks), so an H100 or H200 runs all three passes.
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
  // Three values: entry_mufu (the same kernel as entry without the polynomial exp2) is gone.
  EXPECT_EQ(mamba_scan_kernel_option().choices, (std::vector<std::string>{"auto", "entry", "lane"}));
  // auto is the entry kernel at N 8 and 16 (cuda_plan.cpp says why), the warp scan at any other N.
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(16, "")), MambaScanKernel::entry);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(8, "auto")), MambaScanKernel::entry);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(16, "entry")), MambaScanKernel::entry);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(17, "auto")), MambaScanKernel::lane);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(64, "")), MambaScanKernel::lane);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(16, "lane")), MambaScanKernel::lane);
  EXPECT_EQ(mamba_scan_kernel_of(mamba_cell(8, "entry")), MambaScanKernel::entry);
  EXPECT_FALSE(mamba_scan_kernel_of(mamba_cell(32, "entry")));
  EXPECT_FALSE(mamba_cuda_unsupported(mamba_cell(16, "entry")));
  EXPECT_FALSE(mamba_cuda_unsupported(mamba_cell(32, "lane")));
  const std::optional<std::string> refused = mamba_cuda_unsupported(mamba_cell(32, "entry"));
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("scan_kernel"), std::string::npos) << *refused;
  // What a row's gpu_kernel records.
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(16, "entry")), "prefill entry (N 16)");
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(16, "")), "prefill entry (N 16)");
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(16, "lane")), "prefill lane (warp scan)");
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(8, "entry")), "prefill entry (N 8)");
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(17, "")), "prefill lane (warp scan)");
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(16, "lane", Phase::decode)), "decode (context prefill lane (warp scan))");
  EXPECT_EQ(mamba_gpu_kernel_name(mamba_cell(8, "", Phase::decode)), "decode (context prefill entry (N 8))");
}

}  // namespace
}  // namespace arch_bench
