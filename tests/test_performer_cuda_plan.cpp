// performer CUDA launch planning, on the CPU: the grids and thread maps the kernels use (the same
// constexpr index maps, replayed here) cover every element exactly once, the workspace parts are
// disjoint and sized, shared memory fits without opt-in, and the cells the kernels refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/checked_size.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/performer/cuda_plan.hpp"
#include "mechanisms/registry.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

constexpr std::size_t kSharedWithoutOptIn = 48 * 1024;

PerformerShape shape(std::int64_t heads, std::int64_t dim, std::int64_t m,
                     PerformerFeatures kind = PerformerFeatures::favor_plus) {
  return {heads, dim, dim, m, kind};
}

bool all_once(const std::vector<int>& touched) {
  return std::all_of(touched.begin(), touched.end(), [](int n) { return n == 1; });
}

// Blocks 0..blocks-1 of performer_feature_block, tiles of `tile_tokens` tokens over `token_tiles`
// tiles a head, visit every token of the queries and every token of the keys of `heads` heads once.
void expect_feature_blocks_cover_every_token_once(std::int64_t blocks, std::int64_t token_tiles, int tile_tokens,
                                                  std::int64_t heads, std::int64_t tokens) {
  std::vector<int> queries(static_cast<std::size_t>(heads * tokens), 0), keys(queries.size(), 0);
  for (std::int64_t block = 0; block < blocks; ++block) {
    const PerformerFeatureTile tile = performer_feature_block(block, token_tiles, tile_tokens);
    ASSERT_LT(tile.bh, heads);
    for (int r = 0; r < tile_tokens && tile.first_token + r < tokens; ++r) {
      ++(tile.keys ? keys : queries)[static_cast<std::size_t>(tile.bh * tokens + tile.first_token + r)];
    }
  }
  EXPECT_TRUE(all_once(queries)) << tokens;
  EXPECT_TRUE(all_once(keys)) << tokens;
}

TEST(PerformerCudaPlan, DecodeTouchesEveryStateElementExactlyOnce) {
  for (const std::int64_t dv : {1, 3, 16, 64, 100, 256}) {
    for (const std::int64_t m : {1, 2, 64, 256, 1000}) {
      const PerformerDecodePlan plan = plan_performer_decode(shape(3, dv, m));
      std::vector<int> touched(static_cast<std::size_t>(m * dv), 0);
      for (int t = 0; t < plan.threads; ++t) {
        const int j = performer_decode_column(plan, t), group = performer_decode_group(plan, t);
        if (group >= plan.row_groups) continue;  // idle in the update, busy in the loads
        ASSERT_LT(j, dv);
        for (std::int64_t i = group; i < m; i += plan.row_groups) ++touched[static_cast<std::size_t>(i * dv + j)];
      }
      EXPECT_TRUE(all_once(touched)) << "m " << m << " dv " << dv;
      EXPECT_EQ(plan.blocks, 3);  // one block per head owns its S, z and M
    }
  }
}

TEST(PerformerCudaPlan, DecodeSharedMemoryFitsForEveryFeatureCountAndWidth) {
  for (const std::int64_t m : {1, 256, 4096}) {
    for (const std::int64_t d : {1, 64, 256}) {
      for (const PerformerFeatures kind : {PerformerFeatures::favor_plus, PerformerFeatures::trig}) {
        if (kind == PerformerFeatures::trig && m % 2 != 0) continue;
        const PerformerDecodePlan plan = plan_performer_decode(shape(8, d, m, kind));
        EXPECT_EQ(plan.threads, kPerformerCudaThreads);
        EXPECT_LE(plan.shared_bytes, kSharedWithoutOptIn) << m << " " << d;
        // x_q, x_k, phi_q, phi_k, v, partial numerators and the scratch of the reductions.
        EXPECT_EQ(plan.shared_bytes,
                  sizeof(float) * static_cast<std::size_t>(2 * d + 2 * m + d + plan.row_groups * d + kPerformerReduceFloats));
        EXPECT_EQ(plan.projection_rows, kind == PerformerFeatures::trig ? m / 2 : m);
        EXPECT_GE(plan.row_groups, 1);
        EXPECT_LE(plan.row_groups * d, kPerformerCudaThreads);
      }
    }
  }
  // The seed's shape: 4 row groups of 64 columns fill the 256-thread block.
  EXPECT_EQ(plan_performer_decode(shape(8, 64, 256)).row_groups, 4);
}

TEST(PerformerCudaPlan, FeatureBlocksCoverEveryTokenOfQueriesAndKeysOnce) {
  for (const std::int64_t tokens : {1, 15, 16, 17, 100}) {
    const std::int64_t heads = 3;
    const PerformerPrefillPlan plan = plan_performer_prefill(shape(heads, 64, 256), tokens);
    expect_feature_blocks_cover_every_token_once(plan.feature_blocks, plan.token_tiles, kPerformerFeatureTokens, heads,
                                                 tokens);
  }
}

// Stages 3-5 run on the common chunkwise grid over m x dv (test_chunk_tile.cpp checks its coverage).
TEST(PerformerCudaPlan, ChunkStagesAreTheChunkwiseGridOverFeatures) {
  for (const std::int64_t m : {1, 64, 100, 256}) {
    for (const std::int64_t dv : {16, 64, 200}) {
      const std::int64_t heads = 2, tokens = 130;
      const PerformerPrefillPlan plan = plan_performer_prefill({heads, dv, dv, m, PerformerFeatures::favor_plus}, tokens);
      const ChunkwiseGrid grid = plan_chunkwise_grid(heads, tokens, m, dv);
      EXPECT_EQ(plan.chunks, grid.chunks);
      EXPECT_EQ(plan.key_tiles, grid.key_tiles);
      EXPECT_EQ(plan.value_tiles, grid.value_tiles);
      EXPECT_EQ(plan.state_blocks, grid.state_blocks);
      EXPECT_EQ(plan.prefix_blocks, grid.prefix_blocks);
      EXPECT_EQ(plan.output_blocks, grid.output_blocks);
      EXPECT_EQ(plan.threads, kChunkTileThreads);
    }
  }
}

TEST(PerformerCudaPlan, WorkspacePartsAreDisjointAndSized) {
  const std::int64_t heads = 3, tokens = 130, m = 96, dv = 48;
  const PerformerPrefillPlan plan = plan_performer_prefill({heads, 40, dv, m, PerformerFeatures::favor_plus}, tokens);
  const PerformerPrefillWorkspace& w = plan.workspace;
  const std::int64_t chunks = 3;
  ASSERT_EQ(plan.chunks, chunks);
  EXPECT_EQ(w.query_features, 0);
  EXPECT_EQ(w.key_features - w.query_features, heads * tokens * m);
  EXPECT_EQ(w.key_features_low, 0);  // the SIMT path's keys are fp32: no lo plane
  EXPECT_EQ(w.key_scale - w.key_features, heads * tokens * m);
  EXPECT_EQ(w.row_max - w.key_scale, heads * tokens);
  EXPECT_EQ(w.carried_max - w.row_max, heads * tokens);
  EXPECT_EQ(w.chunk_states - w.carried_max, heads);
  EXPECT_EQ(w.chunk_sums - w.chunk_states, heads * chunks * m * dv);
  EXPECT_EQ(w.denominators - w.chunk_sums, heads * chunks * m);
  EXPECT_EQ(w.floats - w.denominators, heads * tokens);
  EXPECT_EQ(plan.workspace_bytes(), 4 * w.floats);
  EXPECT_EQ(plan.prefix_elements, m * dv + m);
  EXPECT_EQ(plan.prefix_blocks % heads, 0);
  EXPECT_GE(plan.prefix_blocks / heads * plan.threads, plan.prefix_elements);
  EXPECT_LE(plan.output_shared_bytes, kSharedWithoutOptIn);
  EXPECT_LE(plan.state_shared_bytes + sizeof(float) * kChunkTile, kSharedWithoutOptIn);
  EXPECT_LE(plan_performer_prefill(shape(1, 256, 4096), 10).feature_shared_bytes, kSharedWithoutOptIn);
  // A sequence too long for 64-bit sizes is refused, not wrapped.
  EXPECT_THROW(plan_performer_prefill(shape(1 << 20, 64, 4096), std::int64_t{1} << 40), SizeOverflow);
}

// The tensor-core path stores the features as bf16 planes (phi(q); phi(k) hi, then lo), each a
// whole number of 16-byte units, two elements a float; everything after them as on the SIMT path.
TEST(PerformerCudaPlan, TensorCoreWorkspaceHoldsBf16FeaturePlanes) {
  for (const std::int64_t tokens : {1, 130, 8192}) {
    for (const std::int64_t m : {17, 96, 256}) {
      const std::int64_t heads = 3, dv = 48, features = heads * tokens * m;
      const PerformerShape s{heads, 40, dv, m, PerformerFeatures::favor_plus};
      const PerformerPrefillWorkspace simt = plan_performer_prefill(s, tokens).workspace;
      const PerformerPrefillWorkspace w =
          plan_performer_prefill(s, tokens, PerformerPrefillPath::tensor_core_bf16).workspace;
      const std::int64_t plane = w.key_features - w.query_features;  // floats
      EXPECT_EQ(w.query_features, 0);
      EXPECT_GE(2 * plane, features);      // room for every bf16 element
      EXPECT_LT(2 * plane, features + 8);  // and less than one 16-byte unit more
      EXPECT_EQ(plane % 4, 0);             // each plane starts 16-byte aligned
      EXPECT_EQ(w.key_features_low - w.key_features, plane);
      EXPECT_EQ(w.key_scale - w.key_features_low, plane);
      // The rest is the SIMT layout moved down by what the features gave up.
      const std::int64_t saved = simt.key_scale - w.key_scale;
      EXPECT_EQ(saved, 2 * features - 3 * plane);
      EXPECT_EQ(w.floats, simt.floats - saved);
      EXPECT_EQ(w.denominators - w.key_scale, simt.denominators - simt.key_scale);
    }
  }
}

TEST(PerformerCudaPlan, UnsupportedCellsAndTheStabiliser) {
  const Mechanism* performer = find_mechanism("performer");
  ASSERT_NE(performer, nullptr);
  Cell cell = testing::mechanism_cell("performer", 8, 64, 1024, DType::bfloat16, Phase::prefill);
  EXPECT_FALSE(performer_cuda_unsupported(cell));
  cell.options.set("feature_map", std::string("trig"));
  EXPECT_FALSE(performer_cuda_unsupported(cell));
  cell.options.set("feature_map", std::string("favor+"));
  cell.options.set("favor_stabilizer", std::string("published"));
  const auto published = performer_cuda_unsupported(cell);
  ASSERT_TRUE(published);
  EXPECT_NE(published->find("causal"), std::string::npos) << *published;
  const auto on_cuda = performer->unsupported_on(cell, "cuda");
  ASSERT_TRUE(on_cuda);
  EXPECT_NE(on_cuda->find("causal"), std::string::npos) << *on_cuda;
  EXPECT_FALSE(performer->unsupported_on(cell, "cpu"));
  cell.options.set("favor_stabilizer", std::string("causal"));
  cell.head_dim = 512;
  EXPECT_TRUE(performer_cuda_unsupported(cell));
  // The GPU workspace of a bf16 prefill: features of every token (bf16: phi(q), phi(k) hi and lo),
  // one fp32 (S, z) per chunk.
  cell.head_dim = 64;
  const std::int64_t gpu = performer_cuda_workspace_bytes(cell);
  EXPECT_GE(gpu, 2 * 3 * 8 * 1024 * 256 + 4 * 8 * 16 * 256 * 64);
  EXPECT_GE(performer->predicted_peak_bytes(cell), gpu);
  cell.phase = Phase::decode;
  EXPECT_EQ(performer_cuda_workspace_bytes(cell), 4 * 8);  // one denominator per head
}

// The bf16 prefill's stage 1 on tensor cores: 64-token tiles of queries and keys, each token once.
TEST(PerformerCudaPlan, TensorCoreFeatureBlocksCoverEveryTokenOfQueriesAndKeysOnce) {
  for (const std::int64_t tokens : {1, 63, 64, 65, 300}) {
    const std::int64_t heads = 3;
    const PerformerPrefillPlan plan =
        plan_performer_prefill(shape(heads, 64, 256), tokens, PerformerPrefillPath::tensor_core_bf16);
    ASSERT_EQ(plan.prefill_path, PerformerPrefillPath::tensor_core_bf16);
    const PerformerTensorCoreFeaturePlan& tc = plan.tensor_core;
    EXPECT_EQ(tc.blocks, heads * ceil_div(tokens, kPerformerTensorCoreTokens) * 2);
    expect_feature_blocks_cover_every_token_once(tc.blocks, tc.token_tiles, kPerformerTensorCoreTokens, heads, tokens);
  }
}

// wmma tiles need dk and n padded to 16, a row stride that is a multiple of 8 bf16 and 32-byte
// aligned tile pointers; every region fits beside the others in 48 KiB, for every width the
// kernels take; every warp's column tiles together cover n once.
TEST(PerformerCudaPlan, TensorCoreFeatureTilesArePaddedAlignedAndFit) {
  for (const std::int64_t dk : {1, 16, 40, 64, 100, 128, 256}) {
    for (const std::int64_t m : {2, 16, 100, 256, 4096}) {
      for (const PerformerFeatures kind : {PerformerFeatures::favor_plus, PerformerFeatures::trig}) {
        const PerformerTensorCoreFeaturePlan tc = plan_performer_tensor_core_features(shape(2, dk, m, kind), 130);
        const std::int64_t n = kind == PerformerFeatures::trig ? m / 2 : m;
        EXPECT_EQ(tc.projection_rows, n);
        EXPECT_EQ(tc.dk_padded % kPerformerTensorCoreFragment, 0);
        EXPECT_GE(tc.dk_padded, dk);
        EXPECT_LT(tc.dk_padded - dk, kPerformerTensorCoreFragment);
        EXPECT_EQ(tc.columns_padded % kPerformerTensorCoreFragment, 0);
        EXPECT_GE(tc.columns_padded, n);
        EXPECT_LT(tc.columns_padded - n, kPerformerTensorCoreFragment);
        EXPECT_EQ(tc.ld_x % 8, 0);
        EXPECT_GE(tc.ld_x, tc.dk_padded);
        EXPECT_EQ(tc.split_elements(), 2 * tc.dk_padded * tc.columns_padded);
        // Regions in order, each 128-byte aligned and past the one before.
        const std::size_t regions[] = {tc.x, tc.stage, tc.partial, tc.top, tc.half_norm};
        const std::size_t sizes[] = {2u * kPerformerTensorCoreTokens * tc.ld_x,
                                     4u * kPerformerTensorCoreWarps * 256, 4u * kPerformerTensorCoreWarps * 64, 4u * 64,
                                     4u * 64};
        for (int r = 0; r < 5; ++r) {
          EXPECT_EQ(regions[r] % 128, 0u);
          if (r > 0) {
            EXPECT_GE(regions[r], regions[r - 1] + sizes[r - 1]);
          }
        }
        EXPECT_EQ(tc.shared_bytes, tc.half_norm + sizes[4]);
        EXPECT_LE(tc.shared_bytes, kSharedWithoutOptIn) << dk << " " << m;
        std::vector<int> columns(static_cast<std::size_t>(tc.columns_padded / kPerformerTensorCoreFragment), 0);
        for (int warp = 0; warp < kPerformerTensorCoreWarps; ++warp) {
          for (std::size_t ct = static_cast<std::size_t>(warp); ct < columns.size(); ct += kPerformerTensorCoreWarps) ++columns[ct];
        }
        EXPECT_TRUE(all_once(columns));
      }
    }
  }
}

// Stages 3 and 5 on tensor cores: every region 128-byte aligned, the regions used together disjoint
// (the output kernel's scores and outputs reuse its loop's tiles, nothing else does), wmma's row
// strides, 48 KiB without opt-in; the warps' tiles cover a 64 x 64 block once.
TEST(PerformerCudaPlan, TensorCoreChunkLayoutsAreAlignedDisjointAndFit) {
  struct Region {
    std::size_t at, bytes;
  };
  const auto disjoint = [](const std::vector<Region>& regions) {
    for (std::size_t a = 0; a < regions.size(); ++a) {
      for (std::size_t b = a + 1; b < regions.size(); ++b) {
        const bool apart = regions[a].at + regions[a].bytes <= regions[b].at || regions[b].at + regions[b].bytes <= regions[a].at;
        if (!apart) return false;
      }
    }
    return true;
  };
  constexpr std::size_t kBf16Tile = 2u * 64 * kPerformerBf16Ld, kStepTile = 2u * 64 * kPerformerStepLd;
  const PerformerTensorCoreStateLayout state = performer_tensor_core_state_layout();
  const std::vector<Region> state_regions{
      {state.k, kBf16Tile}, {state.k_low, kBf16Tile}, {state.v, kBf16Tile}, {state.stage, 4u * kPerformerTensorCoreWarps * 256}, {state.weights, 4u * 64}};
  EXPECT_TRUE(disjoint(state_regions));
  for (const Region& r : state_regions) {
    EXPECT_EQ(r.at % 128, 0u);
    EXPECT_LE(r.at + r.bytes, state.bytes);
  }
  const PerformerTensorCoreOutputLayout out = performer_tensor_core_output_layout();
  const std::vector<Region> loop{{out.q, kStepTile}, {out.k, kStepTile},
                                 {out.s, 2u * kPerformerTensorCoreStep * kPerformerBf16Ld},
                                 {out.s_low, 2u * kPerformerTensorCoreStep * kPerformerBf16Ld}};
  const std::vector<Region> after{{out.a, 4u * 64 * kPerformerFloatLd}, {out.p, kBf16Tile}, {out.v, kBf16Tile},
                                  {out.z, 4u * kPerformerTensorCoreStep}, {out.row_scale, 256}, {out.row_max, 256},
                                  {out.key_scale, 256}, {out.denominator, 256}};
  EXPECT_TRUE(disjoint(loop));
  EXPECT_TRUE(disjoint(after));
  for (const Region& r : loop) {  // V, z and the per-row values live through the loop too
    EXPECT_TRUE(disjoint({r, after[2], after[3], after[4], after[5], after[6], after[7]}));
  }
  for (const std::vector<Region>* regions : {&loop, &after}) {
    for (const Region& r : *regions) {
      EXPECT_EQ(r.at % 128, 0u);
      EXPECT_LE(r.at + r.bytes, out.bytes);
    }
  }
  EXPECT_LE(loop.back().at + loop.back().bytes, out.loop_end);
  EXPECT_LE(state.bytes, kSharedWithoutOptIn);
  EXPECT_LE(out.bytes, kSharedWithoutOptIn);
  // wmma: bf16 strides a multiple of 8 elements, fp32 of 4; a 16-row step of each stays 32-byte aligned.
  EXPECT_EQ(kPerformerBf16Ld % 8, 0);
  EXPECT_EQ(kPerformerStepLd % 8, 0);
  EXPECT_EQ(kPerformerFloatLd % 4, 0);
  EXPECT_EQ(kChunkTile % kPerformerTensorCoreStep, 0);
  EXPECT_EQ(kPerformerTensorCoreStep % kPerformerTensorCoreFragment, 0);
  std::vector<int> tiles(16, 0);
  for (int warp = 0; warp < kPerformerTensorCoreWarps; ++warp) {
    for (int x = 0; x < 2; ++x) {
      const PerformerWarpTile t = performer_tensor_core_warp_tile(warp, x);
      ASSERT_LT(t.row, 4);
      ASSERT_LT(t.column, 4);
      ++tiles[static_cast<std::size_t>(t.row * 4 + t.column)];
      EXPECT_EQ(t.column, performer_tensor_core_warp_tile(warp, 0).column);  // one B fragment per pair
    }
  }
  EXPECT_TRUE(all_once(tiles));
  // The plan carries them on the tensor-core path, and the grids are the SIMT stages' own.
  const PerformerPrefillPlan plan = plan_performer_prefill(shape(3, 64, 256), 300, PerformerPrefillPath::tensor_core_bf16);
  EXPECT_EQ(plan.tensor_core_state.bytes, state.bytes);
  EXPECT_EQ(plan.tensor_core_output.bytes, out.bytes);
  EXPECT_EQ(plan.state_blocks, 3 * 5 * 4 * 1);
  EXPECT_EQ(plan.output_blocks, 3 * 5 * 1);
  // Stages 3 + 4 in one pass: one block per (head, key tile, value tile), each walking every chunk.
  EXPECT_EQ(plan.state_scan_blocks, 3 * 4 * 1);
  EXPECT_EQ(plan_performer_prefill(shape(3, 64, 256), 300).state_scan_blocks, 0);  // SIMT: stages 3 and 4
  for (const std::int64_t dv : {16, 64, 200}) {
    for (const std::int64_t m : {17, 64, 256}) {
      const PerformerPrefillPlan p =
          plan_performer_prefill({2, 40, dv, m, PerformerFeatures::favor_plus}, 130, PerformerPrefillPath::tensor_core_bf16);
      ASSERT_EQ(p.state_scan_blocks, 2 * p.key_tiles * p.value_tiles);
      std::vector<int> touched(static_cast<std::size_t>(p.state_scan_blocks), 0);
      for (std::int64_t block = 0; block < p.state_scan_blocks; ++block) {
        const ChunkTile t = performer_state_scan_block(block, p.key_tiles, p.value_tiles);
        ASSERT_EQ(t.chunk, 0);
        ASSERT_LT(t.bh, 2);
        ASSERT_LT(t.key_tile, p.key_tiles);
        ASSERT_LT(t.value_tile, p.value_tiles);
        ++touched[static_cast<std::size_t>((t.bh * p.key_tiles + t.key_tile) * p.value_tiles + t.value_tile)];
      }
      EXPECT_TRUE(all_once(touched)) << m << " " << dv;
    }
  }
}

TEST(PerformerCudaPlan, Bf16PrefillCellsRunOnTensorCores) {
  Cell cell = testing::mechanism_cell("performer", 8, 64, 1024, DType::bfloat16, Phase::prefill);
  EXPECT_EQ(performer_cuda_prefill_path(cell), PerformerPrefillPath::tensor_core_bf16);
  EXPECT_EQ(performer_gpu_kernel_name(cell),
            "prefill wmma_bf16: features (W hi+lo), chunk states and their prefix, outputs; simt: row max");
  // The tensor-core cell holds its own workspace (bf16 feature planes: 3 x 2 bytes a feature of a
  // token instead of 2 x 4) and W_hi and W_lo.
  const std::int64_t simt = plan_performer_prefill(shape(8, 64, 256), 1024).workspace_bytes();
  const std::int64_t tensor_core =
      plan_performer_prefill(shape(8, 64, 256), 1024, PerformerPrefillPath::tensor_core_bf16).workspace_bytes();
  EXPECT_EQ(simt - tensor_core, 8 * 1024 * 256 * 2);
  const PerformerTensorCoreFeaturePlan tc = plan_performer_tensor_core_features(shape(8, 64, 256), 1024);
  EXPECT_EQ(performer_cuda_workspace_bytes(cell), tensor_core + 2 * tc.split_elements());
  // fp32 must meet 1e-4 (fp32 products); a decode step and its context fill are unchanged.
  cell.dtype = DType::float32;
  EXPECT_EQ(performer_cuda_prefill_path(cell), PerformerPrefillPath::simt);
  EXPECT_EQ(performer_gpu_kernel_name(cell), "prefill simt");
  EXPECT_EQ(performer_cuda_workspace_bytes(cell), simt);
  cell.dtype = DType::bfloat16;
  cell.phase = Phase::decode;
  EXPECT_EQ(performer_cuda_prefill_path(cell), PerformerPrefillPath::simt);
  EXPECT_EQ(performer_gpu_kernel_name(cell), "decode simt");
}

}  // namespace
}  // namespace arch_bench
