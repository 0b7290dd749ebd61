// linear_attention CUDA launch planning, on the CPU: the grids and thread maps the kernels use
// (the same constexpr index maps, replayed here) cover every element exactly once, chunk counts,
// workspace and shared memory sizes, and the cells the kernels refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/checked_size.hpp"
#include "mechanisms/linear_attention/cuda_plan.hpp"
#include "mechanisms/registry.hpp"
#include "support/cuda_listing.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

constexpr std::size_t kSharedWithoutOptIn = 48 * 1024;

struct Dims {
  std::int64_t dk, dv;
};
const std::vector<Dims> kDims = {{1, 1}, {3, 5}, {16, 16}, {31, 31}, {32, 32}, {48, 48},
                                 {64, 64}, {100, 100}, {128, 128}, {80, 200}, {256, 256}};

TEST(LinearAttentionCudaPlan, DecodeTouchesEveryStateElementExactlyOnce) {
  for (const Dims d : kDims) {
    const LinearDecodePlan plan = plan_linear_attention_decode(3, d.dk, d.dv);
    std::vector<int> touched(static_cast<std::size_t>(d.dk * d.dv), 0);
    for (int t = 0; t < plan.threads; ++t) {
      const int j = linear_decode_column(plan, t), group = linear_decode_group(plan, t);
      if (group >= plan.row_groups) continue;  // the kernel's idle threads
      ASSERT_LT(j, d.dv);
      for (std::int64_t i = group; i < d.dk; i += plan.row_groups) ++touched[static_cast<std::size_t>(i * d.dv + j)];
    }
    EXPECT_TRUE(std::all_of(touched.begin(), touched.end(), [](int n) { return n == 1; }))
        << "dk " << d.dk << " dv " << d.dv;
    EXPECT_EQ(plan.blocks, 3);  // one block per head owns its S and z
  }
}

TEST(LinearAttentionCudaPlan, DecodeBlocksAreWholeWarpsWithinTheKernelBound) {
  for (std::int64_t d = 1; d <= kLinearCudaMaxHeadDim; ++d) {
    const LinearDecodePlan plan = plan_linear_attention_decode(8, d, d);
    EXPECT_EQ(plan.threads % 32, 0) << d;  // the denominator is a full-warp shuffle
    EXPECT_GE(plan.threads, 32) << d;
    EXPECT_LE(plan.threads, kLinearDecodeMaxThreads) << d;
    EXPECT_GE(plan.row_groups, 1) << d;
    EXPECT_LE(plan.row_groups, d) << d;
    EXPECT_GE(plan.threads, plan.columns * plan.row_groups) << d;
    EXPECT_LE(plan.shared_bytes, kSharedWithoutOptIn) << d;
    // phi(q), phi(k), phi(q) z, v, the partial numerators and the denominator all fit.
    EXPECT_GE(plan.shared_bytes, sizeof(float) * (3 * d + d + plan.row_groups * d + 1)) << d;
  }
  // A 64-wide head (the seed's shape) runs 4 row groups of 64 columns: a full 256-thread block.
  const LinearDecodePlan seed = plan_linear_attention_decode(8, 64, 64);
  EXPECT_EQ(seed.row_groups, 4);
  EXPECT_EQ(seed.threads, 256);
}

TEST(LinearAttentionCudaPlan, ChunkCountsAndLastChunkRows) {
  struct Case {
    std::int64_t tokens, chunks, last_rows;
  };
  for (const Case c : {Case{1, 1, 1}, Case{63, 1, 63}, Case{64, 1, 64}, Case{65, 2, 1}, Case{1000, 16, 40},
                       Case{8192, 128, 64}}) {
    const LinearPrefillPlan plan = plan_linear_attention_prefill(2, c.tokens, 64, 64);
    EXPECT_EQ(plan.chunks, c.chunks) << c.tokens;
    EXPECT_EQ(chunk_rows(c.tokens, plan.chunks - 1), c.last_rows) << c.tokens;
    std::int64_t rows = 0;
    for (std::int64_t chunk = 0; chunk < plan.chunks; ++chunk) rows += chunk_rows(c.tokens, chunk);
    EXPECT_EQ(rows, c.tokens);
  }
  const LinearPrefillPlan empty = plan_linear_attention_prefill(2, 0, 64, 64);
  EXPECT_EQ(empty.chunks, 0);
  EXPECT_EQ(empty.state_blocks, 0);
  EXPECT_EQ(empty.output_blocks, 0);
  EXPECT_EQ(empty.workspace_bytes(), 0);
}

// The prefill runs on the common chunkwise grid (test_chunk_tile.cpp checks its coverage), and its
// workspace holds one [dk, dv] state and one [dk] key sum per chunk of every head.
TEST(LinearAttentionCudaPlan, PrefillIsTheChunkwiseGridWithOneStatePerChunk) {
  for (const Dims d : kDims) {
    const std::int64_t heads = 2, tokens = 130;
    const LinearPrefillPlan plan = plan_linear_attention_prefill(heads, tokens, d.dk, d.dv);
    const ChunkwiseGrid grid = plan_chunkwise_grid(heads, tokens, d.dk, d.dv);
    EXPECT_EQ(plan.chunks, grid.chunks);
    EXPECT_EQ(plan.key_tiles, grid.key_tiles);
    EXPECT_EQ(plan.value_tiles, grid.value_tiles);
    EXPECT_EQ(plan.state_blocks, grid.state_blocks);
    EXPECT_EQ(plan.prefix_elements, d.dk * d.dv + d.dk);
    EXPECT_EQ(plan.prefix_blocks, grid.prefix_blocks);
    EXPECT_EQ(plan.output_blocks, grid.output_blocks);
    EXPECT_EQ(plan.threads, kChunkTileThreads);
    EXPECT_EQ(plan.workspace_state_elements, heads * plan.chunks * d.dk * d.dv);
    EXPECT_EQ(plan.workspace_sum_elements, heads * plan.chunks * d.dk);
  }
}

// The shared layouts are the common ones (test_chunk_tile.cpp checks them).
TEST(LinearAttentionCudaPlan, SharedMemoryIsTheCommonLayouts) {
  using L = ChunkOutputSharedLayout;
  using S = ChunkStateSharedLayout;
  for (const Dims d : kDims) {
    const LinearPrefillPlan plan = plan_linear_attention_prefill(8, 1000, d.dk, d.dv);
    EXPECT_EQ(plan.output_shared_bytes, sizeof(float) * L::floats);
    EXPECT_EQ(plan.state_shared_bytes, sizeof(float) * S::floats);
    EXPECT_LE(plan.output_shared_bytes, kSharedWithoutOptIn);
    EXPECT_LE(plan.state_shared_bytes, kSharedWithoutOptIn);
  }
}

TEST(LinearAttentionCudaPlan, WorkspaceHoldsOneStateAndKeySumPerChunk) {
  // The seed's largest prefill: 8 heads, L = 8192 (128 chunks), head_dim 64, on the SIMT kernels
  // (fp32; the bf16 prefill runs on tensor cores, test_linear_attention_tensor_core_replay.cpp).
  Cell cell = testing::small_cell(8, 64, 8192, DType::float32, Phase::prefill);
  EXPECT_EQ(linear_attention_cuda_workspace_bytes(cell), 8LL * 128 * (64 * 64 + 64) * 4);
  cell.sequence_length = 65;  // a partial second chunk still needs its own state
  EXPECT_EQ(linear_attention_cuda_workspace_bytes(cell), 8LL * 2 * (64 * 64 + 64) * 4);
  cell.phase = Phase::decode;  // the decode cell holds no workspace (context staging is freed)
  EXPECT_EQ(linear_attention_cuda_workspace_bytes(cell), 0);
  cell.phase = Phase::prefill;
  cell.sequence_length = std::int64_t{1} << 62;
  EXPECT_THROW(linear_attention_cuda_workspace_bytes(cell), SizeOverflow);
}

TEST(LinearAttentionCudaPlan, UnsupportedCells) {
  Cell cell = testing::small_cell(8, 64, 512, DType::bfloat16, Phase::prefill);
  EXPECT_FALSE(linear_attention_cuda_unsupported(cell));
  cell.head_dim = 1;
  EXPECT_FALSE(linear_attention_cuda_unsupported(cell));
  cell.head_dim = 256;
  EXPECT_FALSE(linear_attention_cuda_unsupported(cell));
  cell.head_dim = 257;
  ASSERT_TRUE(linear_attention_cuda_unsupported(cell));
  EXPECT_NE(linear_attention_cuda_unsupported(cell)->find("head_dim"), std::string::npos);
  cell.head_dim = 0;
  EXPECT_TRUE(linear_attention_cuda_unsupported(cell));
  // 2^40 tokens are 2^34 chunks per head: more blocks than a grid holds. Decode has no such grid.
  cell.head_dim = 64;
  cell.sequence_length = std::int64_t{1} << 40;
  ASSERT_TRUE(linear_attention_cuda_unsupported(cell));
  EXPECT_NE(linear_attention_cuda_unsupported(cell)->find("grid"), std::string::npos);
  cell.phase = Phase::decode;
  EXPECT_FALSE(linear_attention_cuda_unsupported(cell));
}

TEST(LinearAttentionCudaPlan, MechanismAsksThePlanOnlyForTheCudaBackend) {
  const Mechanism* linear = find_mechanism("linear_attention");
  ASSERT_NE(linear, nullptr);
  Cell cell = testing::small_cell(8, 257, 512, DType::bfloat16, Phase::prefill);
  EXPECT_TRUE(linear->unsupported_on(cell, "cuda"));
  EXPECT_FALSE(linear->unsupported_on(cell, "cpu"));
  cell.head_dim = 64;
  EXPECT_FALSE(linear->unsupported_on(cell, "cuda"));
  testing::expect_lists_cuda_exactly_when_built(*linear);
}

}  // namespace
}  // namespace arch_bench
