// The fused state pass of the chunkwise scalar-decay prefill (mechanisms/common/chunk_scalar_decay_fused.cuh),
// planned on the CPU (chunk_scalar_decay_plan.hpp): the auto rule and its boundaries, the column tile,
// the shared layout, the coverage of every state element by exactly one warp's fragment, the
// entering states written exactly once per chunk (the workspace the output kernel reads), the
// register prefetch covering a chunk's operands, the workspace and peak without chunk_log_decay,
// the grid limit, the state_pass option shared by retnet, mamba2 and linear_attention, and the
// gpu_kernel phrase.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/backends/cpu/cpu_backend.hpp"
#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/common/chunk_scalar_decay_plan.hpp"
#include "mechanisms/common/chunk_scalar_decay_workspace.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/linear_attention/cuda_plan.hpp"
#include "mechanisms/mamba2/cuda_plan.hpp"
#include "mechanisms/option_catalog.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/retnet/cuda_plan.hpp"
#include "support/chunk_layout_checks.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

using namespace testing;

constexpr int kC = kScalarDecayChunk;
constexpr int kF = kScalarDecayFragment;
constexpr int kWarps = kScalarDecayThreads / 32;
constexpr int kH200Sms = 132;
using Choice = ScalarDecayStatePassChoice;
using Pass = ScalarDecayStatePass;

TEST(ChunkScalarDecayFusedPlan, AutoFusesWhereTheGridIsOneWaveCoveringEverySm) {
  // B16 H8 d64: 128 heads x 2 tiles of 32 = 256 blocks, one wave of 2 x 132: fused. B1 H8: at most
  // 32 blocks: the three kernels.
  EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::automatic, 128, 64, 64, kH200Sms), Pass::fused);
  EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::automatic, 128, 128, 64, kH200Sms), Pass::fused);  // mamba2
  EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::automatic, 8, 64, 64, kH200Sms), Pass::three_kernel);
  EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::automatic, 8, 128, 64, kH200Sms), Pass::three_kernel);
  // linear_attention at B16: dv + 16 = 80 columns divide only into 16s, 640 blocks: three waves.
  EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::automatic, 128, 64, 80, kH200Sms), Pass::three_kernel);
  // The lower boundary: 33 heads x 4 tiles of 16 = 132 blocks fuse, 32 x 4 = 128 do not.
  EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::automatic, 33, 64, 64, kH200Sms), Pass::fused);
  EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::automatic, 32, 64, 64, kH200Sms), Pass::three_kernel);
  // The upper: 264 heads x one tile of 64 = 264 blocks fuse, 265 are a second wave.
  EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::automatic, 264, 64, 64, kH200Sms), Pass::fused);
  EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::automatic, 265, 64, 64, kH200Sms), Pass::three_kernel);
  EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::automatic, 128, 64, 64, 0), Pass::three_kernel)
      << "no device known: the three kernels";
  for (const std::int64_t bh : {1, 8, 128, 4096}) {
    EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::fused, bh, 64, 64, kH200Sms), Pass::fused);
    EXPECT_EQ(chunk_scalar_decay_state_pass(Choice::three_kernel, bh, 64, 64, kH200Sms), Pass::three_kernel);
    EXPECT_EQ(plan_chunk_scalar_decay(bh, 300, 64, 64, Choice::fused, kH200Sms).state_pass, Pass::fused);
  }
  EXPECT_EQ(plan_chunk_scalar_decay(128, 8192, 64, 64).state_pass, Pass::three_kernel) << "the default";
}

TEST(ChunkScalarDecayFusedPlan, ColumnTileIsTheNarrowestWhoseGridIsOneWave) {
  for (const int dk : {16, 64, 128}) {
    for (const int dv : {16, 32, 48, 64, 80, 96, 112, 128}) {
      for (const std::int64_t bh : {1, 8, 66, 128, 1024}) {
        for (const int sms : {0, kH200Sms}) {
          const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(bh, 1000, dk, dv, Choice::fused, sms);
          const int tile = plan.fused_column_tile;
          EXPECT_EQ(tile % kF, 0);
          EXPECT_EQ(plan.fused_column_tiles * tile, dv);
          EXPECT_EQ(plan.fused_blocks, bh * plan.fused_column_tiles);
          EXPECT_LE(tile, kScalarDecayFusedMaxTile);
          EXPECT_LE(dk * tile, kScalarDecayFusedMaxTileElements);
          const std::int64_t wave = std::int64_t{kScalarDecayFusedMinBlocksPerSm} * sms;
          for (const int other : kScalarDecayFusedTiles) {
            if (dv % other != 0 || dk * other > kScalarDecayFusedMaxTileElements || other == tile) continue;
            if (other < tile) {
              EXPECT_TRUE(sms > 0 ? bh * (dv / other) > wave : true) << "a narrower tile would have been one wave";
            } else {
              EXPECT_TRUE(sms > 0 && plan.fused_blocks <= wave) << "a wider tile: fewer waves";
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(plan_chunk_scalar_decay(128, 8192, 64, 64, Choice::automatic, kH200Sms).fused_column_tile, 32);
  EXPECT_EQ(plan_chunk_scalar_decay(128, 8192, 128, 64, Choice::automatic, kH200Sms).fused_blocks, 256);
  EXPECT_EQ(plan_chunk_scalar_decay(8, 8192, 64, 64, Choice::fused, kH200Sms).fused_column_tile, 16);
  EXPECT_EQ(plan_chunk_scalar_decay(1024, 8192, 64, 64, Choice::automatic, kH200Sms).fused_column_tile, 64);
  EXPECT_EQ(plan_chunk_scalar_decay(1024, 8192, 128, 64, Choice::automatic, kH200Sms).fused_column_tile, 32)
      << "dk 128: at most 32 columns, two fragments a warp";
  for (int dk = 16; dk <= kScalarDecayMaxDim; dk += 16) {
    const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(1, 64, dk, 64, Choice::fused, 0);
    EXPECT_LE((dk / kF) * (plan.fused_column_tile / kF), kScalarDecayFusedMaxFragments * kWarps) << dk;
  }
}

TEST(ChunkScalarDecayFusedPlan, SharedLayoutIsDisjointAlignedAndLeavesRoomForFourBlocksPerSm) {
  std::size_t widest = 0;
  for (int dk = 16; dk <= kScalarDecayMaxDim; dk += 16) {
    for (int dv = 16; dv <= kScalarDecayMaxDim; dv += 16) {
      const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(1, 100, dk, dv, Choice::fused, 0);
      expect_wmma_bf16_stride(plan.ld_fused_v);
      EXPECT_GE(plan.ld_fused_v, plan.fused_column_tile);
      const auto& f = plan.fused_layout;
      expect_disjoint_aligned({{f.k, kC * plan.ld_k * 2u},
                               {f.v, kC * plan.ld_fused_v * 2u},
                               {f.decay, 2 * kC * 4u},
                               {f.stage, std::size_t{kWarps} * kF * kF * 4u}},
                              f.bytes);
      widest = std::max(widest, f.bytes);
      EXPECT_EQ(plan.max_shared_bytes(), std::max(f.bytes, plan.output_layout.bytes));
    }
  }
  EXPECT_LE(4 * widest, kScalarDecayMaxSharedBytes) << widest;
  EXPECT_EQ(widest, 31232u) << "dk 128, tile 32: K 17408 + V 5120 + b 512 + staging 8192, 128-aligned";
}

TEST(ChunkScalarDecayFusedPlan, WarpFragmentsCoverEveryStateElementOnceAndEnteringStatesOncePerChunk) {
  for (const int dk : {16, 64, 128}) {
    for (const int dv : {16, 48, 64, 80, 128}) {
      for (const std::int64_t tokens : {1, 65, 200}) {
        const std::int64_t bh = 3;
        const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(bh, tokens, dk, dv, Choice::fused, 0);
        std::vector<int> carried(static_cast<std::size_t>(bh * dk * dv), 0);
        std::vector<int> entering(static_cast<std::size_t>(2 * plan.workspace_state_elements), 0);
        const int width = plan.fused_column_tile, tiles_j = width / kF, fragments = (dk / kF) * tiles_j;
        for (std::int64_t block = 0; block < plan.fused_blocks; ++block) {
          const std::int64_t b = block / plan.fused_column_tiles;
          const int j0 = static_cast<int>(block % plan.fused_column_tiles) * width;
          for (int warp = 0; warp < kWarps; ++warp) {
            for (int f = 0; f < kScalarDecayFusedMaxFragments; ++f) {
              const int tile = warp + f * kWarps;
              if (tile >= fragments) continue;
              const int ti = tile / tiles_j, tj = tile % tiles_j;
              for (int r = 0; r < kF; ++r) {  // the fp32 load and store of the carried fragment
                for (int c = 0; c < kF; ++c) {
                  ++carried[static_cast<std::size_t>((b * dk + ti * kF + r) * dv + j0 + tj * kF + c)];
                }
              }
              for (std::int64_t chunk = 0; chunk < plan.chunks; ++chunk) {  // the bf16 entering state
                const std::int64_t at = scalar_decay_state_offset(plan, b, chunk) + std::int64_t{ti * kF} * dv + j0 + tj * kF;
                for (int lane = 0; lane < 32; ++lane) {
                  const std::int64_t first = at + std::int64_t{lane / 2} * dv + (lane % 2) * 8;
                  ASSERT_EQ(first % 8, 0) << "16-byte vector";
                  for (int c = 0; c < 8; ++c) {
                    ASSERT_LT(first + c, 2 * plan.workspace_state_elements);
                    ++entering[static_cast<std::size_t>(first + c)];
                  }
                }
              }
            }
          }
          // The fp32 fragment loads from the head's state need a 32-byte aligned start and a
          // row stride of 16 bytes: dv and j0 are multiples of 16 floats.
          EXPECT_EQ(j0 % kF, 0);
        }
        for (const int n : carried) ASSERT_EQ(n, 1) << dk << " x " << dv;
        for (const int n : entering) ASSERT_EQ(n, 1) << dk << " x " << dv << " L " << tokens;
      }
    }
  }
}

// The kernel's prefetch walk (scalar_decay_pair_*, the functions PairWalk calls) over a [C][width]
// tile in the passes its register arrays hold: every element exactly once, a pair inside one row.
void expect_pair_walk_covers(int width, int passes) {
  std::vector<int> seen(static_cast<std::size_t>(kC * width), 0);
  const int rows_per_pass = scalar_decay_pair_rows_per_pass(width);
  for (int t = 0; t < kScalarDecayThreads; ++t) {
    const int column = scalar_decay_pair_column(width, t), first_row = scalar_decay_pair_first_row(width, t);
    ASSERT_EQ(column % 2, 0);
    ASSERT_LT(column + 1, width) << "a pair inside one row";
    for (int pass = 0; pass < passes; ++pass) {
      const int row = scalar_decay_pair_row(first_row, rows_per_pass, pass);
      if (row < 0) continue;
      ASSERT_LT(row, kC);
      ++seen[static_cast<std::size_t>(row * width + column)];
      ++seen[static_cast<std::size_t>(row * width + column + 1)];
    }
  }
  for (std::size_t e = 0; e < seen.size(); ++e) ASSERT_EQ(seen[e], 1) << "width " << width << " element " << e;
}

TEST(ChunkScalarDecayFusedPlan, EachThreadsPrefetchCoversTheChunksOperands) {
  // K at every dk the kernels take (dk 96: 5 rows a pass, threads 240..255 idle, 13 passes), V at
  // every column tile a plan can choose.
  for (int dk = 16; dk <= kScalarDecayMaxDim; dk += 16) expect_pair_walk_covers(dk, kScalarDecayFusedKeyPasses);
  for (const int tile : kScalarDecayFusedTiles) expect_pair_walk_covers(tile, kScalarDecayFusedValuePasses);
  for (int dk = 16; dk <= kScalarDecayMaxDim; dk += 16) {
    for (int dv = 16; dv <= kScalarDecayMaxDim; dv += 16) {
      const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(1, 64, dk, dv, Choice::fused, 0);
      EXPECT_NE(std::find(std::begin(kScalarDecayFusedTiles), std::end(kScalarDecayFusedTiles), plan.fused_column_tile),
                std::end(kScalarDecayFusedTiles));
    }
  }
  // One pass fewer than the arrays hold leaves rows of the widest operands unread (the test has power).
  const int rows_per_pass = scalar_decay_pair_rows_per_pass(kScalarDecayMaxDim);
  EXPECT_GE(scalar_decay_pair_row(0, rows_per_pass, kScalarDecayFusedKeyPasses - 1), 0);
  EXPECT_GE(scalar_decay_pair_row(0, scalar_decay_pair_rows_per_pass(kScalarDecayFusedMaxTile),
                                  kScalarDecayFusedValuePasses - 1),
            0);
}

TEST(ChunkScalarDecayFusedPlan, WorkspaceDropsTheChunkDecaysOnly) {
  const ChunkScalarDecayPlan three = plan_chunk_scalar_decay(128, 8192, 64, 64, Choice::three_kernel, kH200Sms);
  const ChunkScalarDecayPlan fused = plan_chunk_scalar_decay(128, 8192, 64, 64, Choice::fused, kH200Sms);
  EXPECT_EQ(fused.workspace_state_elements, three.workspace_state_elements)
      << "the entering states are kernel (3)'s operand either way";
  EXPECT_EQ(fused.workspace_decay_elements, 0);
  EXPECT_EQ(three.workspace_bytes() - fused.workspace_bytes(), 4 * 128 * 128);
  EXPECT_EQ(chunk_scalar_decay_workspace_bytes(128, 8192, 64, 64, Choice::fused), fused.workspace_bytes());
  EXPECT_EQ(chunk_scalar_decay_workspace_bytes(128, 8192, 64, 64, Choice::automatic), three.workspace_bytes())
      << "auto is predicted before the device is known: the larger";
  HostAllocator allocator;
  std::vector<ByteSpan> spans;
  {
    const ChunkScalarDecayWorkspace workspace(fused, allocator);
    EXPECT_EQ(allocator.current_bytes(), fused.workspace_bytes());
    workspace.add_spans(spans);
    EXPECT_EQ(spans.size(), 1u) << "no empty chunk_log_decay span";
  }
}

TEST(ChunkScalarDecayFusedPlan, RefusesAFusedGridPastTheLimit) {
  ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(1, 64, 64, 64, Choice::fused, 0);
  EXPECT_FALSE(chunk_scalar_decay_unlaunchable(plan).has_value());
  plan.fused_blocks = kCudaMaxGridX + 1;
  EXPECT_TRUE(chunk_scalar_decay_unlaunchable(plan).has_value());
}

TEST(ChunkScalarDecayFusedPlan, GpuKernelSaysWhichStatePassRanAndWhy) {
  const ChunkScalarDecayPlan big = plan_chunk_scalar_decay(128, 8192, 64, 64, Choice::automatic, kH200Sms);
  EXPECT_EQ(scalar_decay_prefill_kernel_name(big, Choice::automatic, kH200Sms),
            "prefill chunkwise bf16 tensor cores, fused state pass (256 blocks of 32 columns, auto: one wave on 132 SMs)");
  const ChunkScalarDecayPlan small = plan_chunk_scalar_decay(8, 8192, 64, 64, Choice::automatic, kH200Sms);
  EXPECT_EQ(scalar_decay_state_pass_description(small, Choice::automatic, kH200Sms),
            "three-kernel state pass (auto: fused would be 32 blocks < 132 SMs)");
  const ChunkScalarDecayPlan linear = plan_chunk_scalar_decay(128, 8192, 64, 80, Choice::automatic, kH200Sms);
  EXPECT_EQ(scalar_decay_state_pass_description(linear, Choice::automatic, kH200Sms),
            "three-kernel state pass (auto: fused would be 640 blocks > one wave of 264 on 132 SMs)");
  EXPECT_EQ(scalar_decay_state_pass_description(plan_chunk_scalar_decay(8, 64, 64, 64, Choice::three_kernel, 132),
                                                Choice::three_kernel, 132),
            "three-kernel state pass (forced)");
  EXPECT_EQ(scalar_decay_state_pass_description(plan_chunk_scalar_decay(8, 64, 64, 64, Choice::fused, 132),
                                                Choice::fused, 132),
            "fused state pass (32 blocks of 16 columns, forced)");
  EXPECT_EQ(scalar_decay_state_pass_description(plan_chunk_scalar_decay(128, 8192, 64, 64, Choice::automatic, 0),
                                                Choice::automatic, 0),
            "three-kernel state pass (auto: no device known)");
  EXPECT_STREQ(scalar_decay_state_pass_name(Pass::fused), "fused");
  EXPECT_STREQ(scalar_decay_state_pass_name(Pass::three_kernel), "three_kernel");
}

TEST(ChunkScalarDecayFusedPlan, TheThreeMechanismsDeclareOneStatePassOption) {
  for (const char* id : {"retnet", "mamba2", "linear_attention"}) {
    const std::vector<OptionSpec> specs = option_specs_of(id);
    const auto it = std::find_if(specs.begin(), specs.end(), [](const OptionSpec& s) { return s.key == "state_pass"; });
    ASSERT_NE(it, specs.end()) << id;
    EXPECT_EQ(it->choices, scalar_decay_state_pass_option().choices) << id;
    EXPECT_EQ(it->help, scalar_decay_state_pass_option().help) << id;
  }
  const DeclaredOption declared = declared_option("state_pass", "test");
  EXPECT_TRUE(declared.axis());
  Cell cell = mechanism_cell("retnet", 8, 64, 8192, DType::bfloat16, Phase::prefill, 16);
  EXPECT_EQ(scalar_decay_state_pass_choice_of(cell), Choice::automatic);
  cell.options.set("state_pass", std::string("fused"));
  EXPECT_EQ(scalar_decay_state_pass_choice_of(cell), Choice::fused);
  EXPECT_EQ(retnet_chunked_prefill_plan(cell, kH200Sms).state_pass, Pass::fused);
  cell.options.set("state_pass", std::string("three_kernel"));
  EXPECT_EQ(retnet_chunked_prefill_plan(cell, kH200Sms).state_pass, Pass::three_kernel);
}

TEST(ChunkScalarDecayFusedPlan, ForcedFusedPrefillsPredictTheSmallerPeak) {
  for (const char* id : {"retnet", "mamba2", "linear_attention"}) {
    const Mechanism* mechanism = find_mechanism(id);
    ASSERT_NE(mechanism, nullptr);
    Cell cell = mechanism_cell(id, 8, 64, 1000, DType::bfloat16, Phase::prefill, 2);
    const std::int64_t automatic = mechanism->predicted_peak_bytes(cell);
    cell.options.set("state_pass", std::string("fused"));
    const std::int64_t fused = mechanism->predicted_peak_bytes(cell);
    EXPECT_EQ(automatic - fused, 4 * 16 * 16) << id << ": the chunk_log_decay array, 16 heads x 16 chunks";
  }
  Cell mamba2 = mechanism_cell("mamba2", 8, 64, 8192, DType::bfloat16, Phase::prefill, 16);
  mamba2.options.set("state_size", std::int64_t{128});
  EXPECT_EQ(mamba2_chunked_prefill_plan(mamba2, kH200Sms).state_pass, Pass::fused);
  EXPECT_EQ(mamba2_chunked_prefill_plan(mamba2, kH200Sms).fused_blocks, 256);
  const ChunkScalarDecayPlan linear = plan_linear_attention_tensor_core_prefill(128, 8192, 64, Choice::automatic, kH200Sms);
  EXPECT_EQ(linear.fused_blocks, 640) << "dv + 16 = 80 columns: five tiles of 16";
  EXPECT_EQ(linear.state_pass, Pass::three_kernel);
}

}  // namespace
}  // namespace arch_bench
