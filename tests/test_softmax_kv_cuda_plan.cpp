// softmax_kv CUDA launch planning (mechanisms/softmax_kv/cuda_plan.cpp), on the CPU: the numbers the
// kernels are launched with, checked against the properties the kernels rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "mechanisms/registry.hpp"
#include "mechanisms/softmax_kv/cuda_plan.hpp"
#include "support/cuda_listing.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {
using testing::small_cell;

constexpr int kH200Multiprocessors = 132;
constexpr std::int64_t kWarpSize = 32;

bool is_power_of_two(std::int64_t n) { return n > 0 && (n & (n - 1)) == 0; }
std::int64_t ceil_div_for_test(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Every split non-empty, adjacent splits sharing their boundary, the whole context covered once.
void expect_splits_cover_context(const SoftmaxDecodeCudaPlan& plan) {
  ASSERT_GE(plan.splits, 1);
  EXPECT_LE(plan.splits, kDecodeMaxSplits);
  EXPECT_EQ(plan.split_begin(0), 0);
  EXPECT_EQ(plan.split_end(plan.splits - 1), plan.context);
  std::int64_t covered = 0;
  for (std::int64_t s = 0; s < plan.splits; ++s) {
    EXPECT_GT(plan.split_end(s), plan.split_begin(s)) << "split " << s << " of " << plan.splits << " is empty";
    if (s > 0) {
      EXPECT_EQ(plan.split_begin(s), plan.split_end(s - 1));
    }
    if (plan.splits > 1) {
      EXPECT_GE(plan.split_end(s) - plan.split_begin(s), kDecodeMinRowsPerSplit);
    }
    covered += plan.split_end(s) - plan.split_begin(s);
  }
  EXPECT_EQ(covered, plan.context);
}

TEST(SoftmaxKvCudaPlan, DecodeOfBatchOneEightHeadsGivesEveryMultiprocessorItsBlocks) {
  const std::int64_t target = std::int64_t{kDecodeBlocksPerMultiprocessor} * kH200Multiprocessors;
  for (std::int64_t length : {8192, 32768, 100000}) {
    const SoftmaxDecodeCudaPlan plan =
        plan_softmax_decode_cuda(8, 1, 64, DType::bfloat16, length + 1, length + 1, kH200Multiprocessors);
    EXPECT_GE(plan.blocks(), target) << "L=" << length;
    EXPECT_LT((plan.splits - 1) * plan.batch_heads, target) << "no more splits than needed";
    expect_splits_cover_context(plan);
  }
  // Shorter contexts stop at the minimum rows per split: L=4096 gives 64 splits, L=2048 32, of 64 rows.
  EXPECT_EQ(plan_softmax_decode_cuda(8, 1, 64, DType::bfloat16, 4097, 4097, kH200Multiprocessors).splits,
            4097 / kDecodeMinRowsPerSplit);
  EXPECT_EQ(plan_softmax_decode_cuda(8, 1, 64, DType::bfloat16, 2049, 2049, kH200Multiprocessors).splits,
            2049 / kDecodeMinRowsPerSplit);
}

TEST(SoftmaxKvCudaPlan, DecodeSplitsAreNonEmptyAndCoverTheContextOnce) {
  for (std::int64_t context : {1, 2, 63, 64, 65, 127, 128, 700, 8193, 16400, 100000}) {
    for (std::int64_t batch_heads : {1, 8, 64}) {
      for (int multiprocessors : {1, kH200Multiprocessors}) {
        SCOPED_TRACE(::testing::Message() << "context " << context << " batch_heads " << batch_heads << " SMs "
                                          << multiprocessors);
        expect_splits_cover_context(
            plan_softmax_decode_cuda(batch_heads, 1, 128, DType::float32, context, context, multiprocessors));
      }
    }
  }
}

TEST(SoftmaxKvCudaPlan, ShortContextsAndManyHeadsDoNotSplit) {
  // Under two minimum splits' worth of rows there is nothing to gain from a combine pass.
  EXPECT_EQ(plan_softmax_decode_cuda(8, 1, 64, DType::bfloat16, 513, 100, kH200Multiprocessors).splits, 1);
  // 4 x 132 heads already give every multiprocessor its blocks.
  EXPECT_EQ(plan_softmax_decode_cuda(kDecodeBlocksPerMultiprocessor * kH200Multiprocessors, 1, 64, DType::bfloat16,
                                     8193, 8193, kH200Multiprocessors)
                .splits,
            1);
  // One head at a long context: as many splits as allowed, never more than the cap.
  EXPECT_EQ(plan_softmax_decode_cuda(1, 1, 64, DType::bfloat16, 1 << 20, 1 << 20, 100).splits,
            kDecodeBlocksPerMultiprocessor * 100);
  EXPECT_EQ(plan_softmax_decode_cuda(1, 1, 64, DType::bfloat16, 1 << 20, 1 << 20, 1000).splits, kDecodeMaxSplits);
}

TEST(SoftmaxKvCudaPlan, DecodeWorkspaceHoldsOnePartialPerSplitWithinTheBound) {
  const SoftmaxDecodeCudaPlan plan = plan_softmax_decode_cuda(8, 1, 64, DType::bfloat16, 8193, 8193, kH200Multiprocessors);
  EXPECT_EQ(plan.workspace_floats(), 8 * plan.splits * (64 + 2));  // (m, l, acc[64]) per head and split
  for (std::int64_t length : {0, 63, 512, 8192, 1 << 20}) {
    for (std::int64_t heads : {1, 8}) {
      Cell cell = small_cell(heads, 128, length, DType::float32);
      for (int multiprocessors : {1, kH200Multiprocessors, 1000}) {
        const SoftmaxDecodeCudaPlan p = plan_softmax_decode_cuda(heads, 1, 128, DType::float32, length + 1, length + 1,
                                                                 multiprocessors);
        EXPECT_LE(p.workspace_floats() * 4, softmax_decode_cuda_workspace_bytes_bound(cell))
            << "L=" << length << " heads=" << heads << " SMs=" << multiprocessors;
      }
    }
  }
}

struct DecodeLanes {
  std::int64_t dim;
  DType dtype;
  int vector_elems, vectors_per_row, lanes_per_row, vectors_per_lane, row_groups;
};

TEST(SoftmaxKvCudaPlan, DecodeLanesReadWholeRowsAsSixteenByteVectors) {
  const DecodeLanes cases[] = {
      {64, DType::bfloat16, 8, 8, 8, 1, 16},   {128, DType::bfloat16, 8, 16, 16, 1, 8},
      {256, DType::bfloat16, 8, 32, 32, 1, 4}, {64, DType::float32, 4, 16, 16, 1, 8},
      {128, DType::float32, 4, 32, 32, 1, 4},  {256, DType::float32, 4, 64, 32, 2, 4},
      // Not a power of two: lanes round up and the extra ones idle.
      {96, DType::bfloat16, 8, 12, 16, 1, 8},  {200, DType::float32, 4, 50, 32, 2, 4},
  };
  for (const DecodeLanes& c : cases) {
    SCOPED_TRACE(::testing::Message() << dtype_name(c.dtype) << " head_dim " << c.dim);
    const SoftmaxDecodeCudaPlan plan = plan_softmax_decode_cuda(8, 1, c.dim, c.dtype, 4097, 4097, kH200Multiprocessors);
    EXPECT_EQ(plan.vector_elems * plan.elem_bytes, kVectorBytes);
    EXPECT_EQ(plan.vector_elems, c.vector_elems);
    EXPECT_EQ(plan.vectors_per_row, c.vectors_per_row);
    EXPECT_EQ(plan.lanes_per_row, c.lanes_per_row);
    EXPECT_EQ(plan.vectors_per_lane, c.vectors_per_lane);
    EXPECT_EQ(plan.row_groups, c.row_groups);
    EXPECT_EQ(plan.rows_per_iteration, c.row_groups * kDecodeRowsInFlight);
    // Shuffle reductions need a power-of-two group inside one warp, and whole groups per block.
    EXPECT_TRUE(is_power_of_two(plan.lanes_per_row));
    EXPECT_EQ(kWarpSize % plan.lanes_per_row, 0);
    EXPECT_EQ(plan.threads % plan.lanes_per_row, 0);
    // The group's lanes reach every vector of the row, with less than one idle vector per lane.
    EXPECT_GE(plan.lanes_per_row * plan.vectors_per_lane, plan.vectors_per_row);
    EXPECT_LT(plan.lanes_per_row * (plan.vectors_per_lane - 1), plan.vectors_per_row);
    EXPECT_LE(plan.vectors_per_lane, 2);  // the kernel has instances for 1 and 2
  }
}

TEST(SoftmaxKvCudaPlan, DecodeSharedMemoryAndCombineBlockFitTheirKernels) {
  for (DType dtype : {DType::bfloat16, DType::float32}) {
    const std::int64_t step = kVectorBytes / static_cast<std::int64_t>(dtype_bytes(dtype));
    for (std::int64_t dim = step; dim <= 256; dim += step) {
      const SoftmaxDecodeCudaPlan plan = plan_softmax_decode_cuda(8, 1, dim, dtype, 1025, 1025, kH200Multiprocessors);
      EXPECT_EQ(plan.shared_bytes, static_cast<std::size_t>(plan.row_groups * (dim + 3)) * sizeof(float));
      EXPECT_LE(plan.shared_bytes, kDefaultSharedBytesLimit) << "head_dim " << dim;  // no opt-in needed
      EXPECT_EQ(plan.combine_threads % kWarpSize, 0);
      EXPECT_GE(plan.combine_threads, dim);  // one thread per output element
      EXPECT_LE(plan.combine_threads, 256);  // __launch_bounds__(256)
      // Instances exist for bf16 with one vector per lane and fp32 with one or two.
      EXPECT_LE(plan.vectors_per_lane, dtype == DType::bfloat16 ? 1 : 2);
    }
  }
}

TEST(SoftmaxKvCudaPlan, DecodePlanRejectsBadShapes) {
  EXPECT_THROW(plan_softmax_decode_cuda(8, 1, 60, DType::bfloat16, 10, 10, 132), std::invalid_argument);  // 120 B rows
  EXPECT_THROW(plan_softmax_decode_cuda(8, 1, 64, DType::float32, 10, 11, 132), std::invalid_argument);   // > capacity
  EXPECT_THROW(plan_softmax_decode_cuda(8, 1, 64, DType::float32, 10, 0, 132), std::invalid_argument);
}

// Grouped-query decode: one block per (split, K/V head, slice of at most 8 queries of its group),
// so every K/V head streams once per slice (once for groups up to 8) instead of once per query head.
TEST(SoftmaxKvCudaPlan, DecodeReadsEachKvHeadOncePerQuerySlice) {
  for (std::int64_t group : {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 32}) {
    SCOPED_TRACE(::testing::Message() << "group " << group);
    const std::int64_t batch_heads = 2 * group;  // two K/V heads
    const SoftmaxDecodeCudaPlan plan =
        plan_softmax_decode_cuda(batch_heads, group, 128, DType::bfloat16, 8193, 8193, kH200Multiprocessors);
    EXPECT_EQ(plan.group, group);
    EXPECT_EQ(plan.batch_kv_heads(), 2);
    // An instance exists for 1, 2, 4 and 8 queries; the smallest that holds the group (up to 8).
    EXPECT_TRUE(plan.queries_per_block == 1 || plan.queries_per_block == 2 || plan.queries_per_block == 4 ||
                plan.queries_per_block == 8);
    EXPECT_GE(plan.queries_per_block, std::min<std::int64_t>(group, kDecodeMaxQueriesPerBlock));
    EXPECT_LT(plan.queries_per_block / 2, std::min<std::int64_t>(group, kDecodeMaxQueriesPerBlock));
    // The slices cover the group, none of them empty.
    EXPECT_GE(plan.query_slices * plan.queries_per_block, group);
    EXPECT_LT((plan.query_slices - 1) * plan.queries_per_block, group);
    EXPECT_EQ(plan.head_blocks(), 2 * plan.query_slices);
    EXPECT_EQ(plan.kv_bytes_read(), 2 * plan.query_slices * 2 * 8193 * 128 * 2);
    if (group <= kDecodeMaxQueriesPerBlock) {
      EXPECT_EQ(plan.query_slices, 1) << "a group of up to 8 streams its K/V head once";
    }
    EXPECT_EQ(plan.workspace_floats(), batch_heads * plan.splits * (128 + 2));  // one partial per query head
    expect_splits_cover_context(plan);
  }
}

// The issue's bar shape (PyTorch SDPA enable_gqa on the H200): 32 query heads over 8 K/V heads,
// head_dim 128. At B1 the 8 K/V heads split L to give every SM its blocks; at B16 (128 K/V heads)
// fewer splits do; each K/V head is read once for its group of 4.
TEST(SoftmaxKvCudaPlan, DecodeOfTheIssueBarShapeSplitsToFillTheH200) {
  const std::int64_t target = std::int64_t{kDecodeBlocksPerMultiprocessor} * kH200Multiprocessors;
  for (std::int64_t batch : {1, 16}) {
    for (std::int64_t length : {8192, 32768}) {
      SCOPED_TRACE(::testing::Message() << "B" << batch << " L" << length);
      const SoftmaxDecodeCudaPlan plan = plan_softmax_decode_cuda(batch * 32, 4, 128, DType::bfloat16, length + 1,
                                                                  length + 1, kH200Multiprocessors);
      EXPECT_EQ(plan.queries_per_block, 4);
      EXPECT_EQ(plan.query_slices, 1);
      EXPECT_EQ(plan.head_blocks(), batch * 8);
      EXPECT_GE(plan.blocks(), target);
      EXPECT_LT((plan.splits - 1) * plan.head_blocks(), target) << "no more splits than needed";
      EXPECT_EQ(plan.kv_bytes_read(), 2 * batch * 8 * (length + 1) * 128 * 2);
      expect_splits_cover_context(plan);
    }
  }
  EXPECT_EQ(plan_softmax_decode_cuda(32, 4, 128, DType::bfloat16, 32769, 32769, kH200Multiprocessors).splits,
            ceil_div_for_test(target, 8));
}

// A grid of K/V heads (times slices) that already gives every SM its blocks is not split.
TEST(SoftmaxKvCudaPlan, DecodeDoesNotSplitWhenTheKvHeadsFillTheMachine) {
  const std::int64_t target = std::int64_t{kDecodeBlocksPerMultiprocessor} * kH200Multiprocessors;
  // target K/V heads in groups of 4: one block each.
  EXPECT_EQ(plan_softmax_decode_cuda(target * 4, 4, 128, DType::bfloat16, 32769, 32769, kH200Multiprocessors).splits, 1);
  // One K/V head fewer: a second split.
  EXPECT_EQ(plan_softmax_decode_cuda((target - 1) * 4, 4, 128, DType::bfloat16, 32769, 32769, kH200Multiprocessors)
                .splits,
            2);
  // Groups of 16 take two slices: half the K/V heads fill the machine.
  EXPECT_EQ(plan_softmax_decode_cuda(target / 2 * 16, 16, 64, DType::bfloat16, 32769, 32769, kH200Multiprocessors)
                .splits,
            1);
}

TEST(SoftmaxKvCudaPlan, DecodeGroupMustDivideTheHeads) {
  EXPECT_THROW(plan_softmax_decode_cuda(8, 3, 64, DType::bfloat16, 10, 10, 132), std::invalid_argument);
  EXPECT_THROW(plan_softmax_decode_cuda(8, 0, 64, DType::bfloat16, 10, 10, 132), std::invalid_argument);
  EXPECT_NO_THROW(plan_softmax_decode_cuda(8, 8, 64, DType::bfloat16, 10, 10, 132));
}

// sliding_window's decode: a ring of `slots` rows, attended whole (context == capacity) or, while it
// fills, over its first rows; every filled row exactly once.
TEST(SoftmaxKvCudaPlan, DecodeOverARingCoversItsFilledRows) {
  for (std::int64_t slots : {1, 64, 4096}) {
    for (std::int64_t filled : {std::int64_t{1}, slots / 2 + 1, slots}) {
      const SoftmaxDecodeCudaPlan plan =
          plan_softmax_decode_cuda(32, 4, 128, DType::bfloat16, slots, filled, kH200Multiprocessors);
      EXPECT_EQ(plan.capacity, slots);
      expect_splits_cover_context(plan);
    }
  }
}

// Banded prefill: the key tiles a query tile skips hold no key of any of its rows' bands, and the
// first tile it loads holds a key of its first row's band (it skips every tile it can).
TEST(SoftmaxKvCudaPlan, PrefillSkipsExactlyTheKeyTilesOutsideTheBand) {
  for (DType dtype : {DType::bfloat16, DType::float32}) {
    for (std::int64_t tokens : {1, 31, 64, 65, 700}) {
      for (std::int64_t window : {0, 1, 5, 32, 63, 64, 65, 200, 1000}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " tokens " << tokens << " W " << window);
        const SoftmaxPrefillCudaPlan plan = plan_softmax_prefill_cuda(8, 2, tokens, 64, dtype, window);
        EXPECT_EQ(plan.group, 2);
        EXPECT_EQ(plan.window, window);
        EXPECT_EQ(plan.band(), window == 0 || window >= tokens ? tokens : window);
        for (std::int64_t tile = 0; tile < plan.query_tiles; ++tile) {
          const std::int64_t first = plan.first_key_tile(tile);
          EXPECT_GE(first, 0);
          EXPECT_LE(first, tile);
          const std::int64_t q0 = tile * plan.query_rows;
          for (std::int64_t t = q0; t < std::min(tokens, q0 + plan.query_rows); ++t) {
            const std::int64_t oldest = window == 0 ? 0 : std::max<std::int64_t>(0, t - window + 1);
            EXPECT_GE(oldest / plan.keys_per_tile, first) << "row " << t << " needs a skipped tile";
          }
          const std::int64_t first_row_oldest = window == 0 ? 0 : std::max<std::int64_t>(0, q0 - window + 1);
          EXPECT_EQ(first_row_oldest / plan.keys_per_tile, first);
        }
      }
    }
  }
  EXPECT_THROW(plan_softmax_prefill_cuda(8, 3, 100, 64, DType::bfloat16, 0), std::invalid_argument);
  EXPECT_THROW(plan_softmax_prefill_cuda(8, 2, 100, 64, DType::bfloat16, -1), std::invalid_argument);
}

TEST(SoftmaxKvCudaPlan, PrefillTakesTensorCoresForBf16HeadDimsUpTo128) {
  EXPECT_EQ(plan_softmax_prefill_cuda(8, 512, 64, DType::bfloat16).path, SoftmaxPrefillPath::mma_bf16);
  EXPECT_EQ(plan_softmax_prefill_cuda(8, 512, 128, DType::bfloat16).path, SoftmaxPrefillPath::mma_bf16);
  EXPECT_EQ(plan_softmax_prefill_cuda(8, 2, 512, 128, DType::bfloat16, 100).path, SoftmaxPrefillPath::mma_bf16);
  EXPECT_EQ(plan_softmax_prefill_cuda(8, 512, 16, DType::bfloat16).path, SoftmaxPrefillPath::tensor_core_bf16);
  EXPECT_EQ(plan_softmax_prefill_cuda(8, 512, 96, DType::bfloat16).path, SoftmaxPrefillPath::tensor_core_bf16);
  EXPECT_EQ(plan_softmax_prefill_cuda(8, 512, 256, DType::bfloat16).path, SoftmaxPrefillPath::simt);
  EXPECT_EQ(plan_softmax_prefill_cuda(8, 512, 72, DType::bfloat16).path, SoftmaxPrefillPath::simt);  // not 16k
  EXPECT_EQ(plan_softmax_prefill_cuda(8, 512, 64, DType::float32).path, SoftmaxPrefillPath::simt);   // no tf32
}

TEST(SoftmaxKvCudaPlan, PrefillQueryTilesCoverEveryToken) {
  struct Case {
    std::int64_t tokens;
    DType dtype;
    std::int64_t tiles;
  };
  const Case cases[] = {{1, DType::bfloat16, 1},    {64, DType::bfloat16, 1},  {65, DType::bfloat16, 2},
                        {1000, DType::bfloat16, 16}, {1, DType::float32, 1},    {32, DType::float32, 1},
                        {33, DType::float32, 2},     {1000, DType::float32, 32}};
  for (const Case& c : cases) {
    const SoftmaxPrefillCudaPlan plan = plan_softmax_prefill_cuda(3, c.tokens, 64, c.dtype);
    EXPECT_EQ(plan.query_tiles, c.tiles) << c.tokens << " " << dtype_name(c.dtype);
    EXPECT_GE(plan.query_tiles * plan.query_rows, c.tokens);
    EXPECT_LT((plan.query_tiles - 1) * plan.query_rows, c.tokens);  // no tile without a token
    EXPECT_EQ(plan.threads, kPrefillThreads);
  }
}

// Regions are aligned, ordered and large enough for their tiles.
void expect_region(std::size_t offset, std::size_t next, std::size_t rows, int ld, std::size_t elem_bytes) {
  EXPECT_EQ(offset % kSharedAlignment, 0u);
  EXPECT_GE(next - offset, rows * static_cast<std::size_t>(ld) * elem_bytes);
}

// Both tensor-core prefills: 64 query rows against 64-key tiles, one warp per 16 query rows.
void expect_prefill_tiles_of_64(const SoftmaxPrefillCudaPlan& plan) {
  EXPECT_EQ(plan.query_rows, 64);
  EXPECT_EQ(plan.keys_per_tile, 64);
  EXPECT_EQ(plan.threads / 32 * 16, plan.query_rows);
}

TEST(SoftmaxKvCudaPlan, PrefillTensorCoreLayoutMeetsWmmaAlignment) {
  for (std::int64_t dim = 16; dim <= 128; dim += 16) {
    if (prefill_mma_takes(dim)) continue;  // the mma path's layout: PrefillMmaLayout... below
    SCOPED_TRACE(::testing::Message() << "head_dim " << dim);
    const SoftmaxPrefillCudaPlan plan = plan_softmax_prefill_cuda(8, 1000, dim, DType::bfloat16);
    ASSERT_EQ(plan.path, SoftmaxPrefillPath::tensor_core_bf16);
    expect_prefill_tiles_of_64(plan);
    expect_region(plan.q_offset, plan.k_offset, 64, plan.ld_q, 2);
    expect_region(plan.k_offset, plan.v_offset, 64, plan.ld_k, 2);
    expect_region(plan.v_offset, plan.s_offset, 64, plan.ld_v, 2);
    expect_region(plan.s_offset, plan.p_offset, 64, plan.ld_s, 4);
    expect_region(plan.p_offset, plan.o_offset, 64, plan.ld_p, 2);
    expect_region(plan.o_offset, plan.shared_bytes, 64, plan.ld_o, 4);
    // wmma: ldm a multiple of 8 (bf16) / 4 (float); a fragment starts on 32 bytes, i.e. every 16th
    // row and 16th column of a tile is 32-byte aligned.
    for (int ld : {plan.ld_q, plan.ld_k, plan.ld_v, plan.ld_p}) {
      EXPECT_EQ(ld % 8, 0);
      EXPECT_EQ(16 * ld * 2 % 32, 0);
    }
    EXPECT_GE(plan.ld_q, dim);
    EXPECT_GE(plan.ld_k, dim);
    EXPECT_GE(plan.ld_v, dim);
    EXPECT_GE(plan.ld_p, 64);
    for (int ld : {plan.ld_s, plan.ld_o}) {
      EXPECT_EQ(ld % 4, 0);
      EXPECT_EQ(16 * ld * 4 % 32, 0);
    }
    EXPECT_GE(plan.ld_s, 64);
    EXPECT_GE(plan.ld_o, dim);
    EXPECT_EQ(plan.ld_q * 2 % 16, 0);  // 16-byte stores of Q/K/V rows
    EXPECT_LE(plan.shared_bytes, kMaxSharedBytesOptIn);
  }
  // head_dim 112: 100 KiB, over the default limit, and two blocks still share a 228 KiB SM
  // (1 KiB reserved per block).
  const SoftmaxPrefillCudaPlan wide = plan_softmax_prefill_cuda(8, 8192, 112, DType::bfloat16);
  EXPECT_EQ(wide.shared_bytes, 102400u);
  EXPECT_TRUE(wide.needs_shared_opt_in());
  EXPECT_LE(2 * (wide.shared_bytes + 1024), 228u * 1024u);
}

// The mma prefill: Q, then kv_stages K tiles and kv_stages V tiles, each a 64-row tile of 16-byte
// aligned rows (cp.async and ldmatrix move 16 bytes) whose pitch puts the 8 rows an ldmatrix 8x8
// matrix reads on 8 different 16-byte groups of banks (no conflicts).
TEST(SoftmaxKvCudaPlan, PrefillMmaLayoutMeetsCpAsyncAndLdmatrix) {
  for (std::int64_t dim : {64, 128}) {
    SCOPED_TRACE(::testing::Message() << "head_dim " << dim);
    const SoftmaxPrefillCudaPlan plan = plan_softmax_prefill_cuda(8, 1000, dim, DType::bfloat16);
    ASSERT_EQ(plan.path, SoftmaxPrefillPath::mma_bf16);
    expect_prefill_tiles_of_64(plan);
    EXPECT_EQ(plan.kv_stages, kPrefillMmaKvStages);
    EXPECT_GE(plan.kv_stages, 2);  // the next tile's copy overlaps this tile's math
    EXPECT_EQ(plan.ld_k, plan.ld_q);
    EXPECT_EQ(plan.ld_v, plan.ld_q);
    EXPECT_GE(plan.ld_q, dim);
    const std::size_t row_bytes = static_cast<std::size_t>(plan.ld_q) * 2;
    EXPECT_EQ(row_bytes % 16, 0u);
    EXPECT_EQ(plan.kv_stage_bytes % kSharedAlignment, 0u);
    EXPECT_GE(plan.kv_stage_bytes, 64 * row_bytes);
    expect_region(plan.q_offset, plan.k_offset, 64, plan.ld_q, 2);
    EXPECT_EQ(plan.k_offset % kSharedAlignment, 0u);
    EXPECT_EQ(plan.v_offset % kSharedAlignment, 0u);
    EXPECT_GE(plan.v_offset - plan.k_offset, plan.kv_stage_bytes * plan.kv_stages);
    EXPECT_GE(plan.shared_bytes - plan.v_offset, plan.kv_stage_bytes * plan.kv_stages);
    // 32 banks of 4 bytes: 8 groups of 16 bytes. Rows r..r+7 of a tile (any start row) hit 8 groups.
    for (std::size_t first_row = 0; first_row < 8; ++first_row) {
      std::vector<bool> used(8, false);
      for (std::size_t r = first_row; r < first_row + 8; ++r) used[r * row_bytes / 16 % 8] = true;
      EXPECT_EQ(std::count(used.begin(), used.end(), true), 8) << "from row " << first_row;
    }
    // The kernel's __launch_bounds__ asks for prefill_mma_min_blocks(dim) blocks per SM: their
    // shared memory fits a 228 KiB SM (1 KiB reserved per block).
    EXPECT_LE(static_cast<std::size_t>(prefill_mma_min_blocks(dim)) * (plan.shared_bytes + 1024), 228u * 1024u);
    EXPECT_LE(plan.shared_bytes, kMaxSharedBytesOptIn);
  }
  EXPECT_FALSE(plan_softmax_prefill_cuda(8, 1000, 64, DType::bfloat16).needs_shared_opt_in());  // 45 KiB
  EXPECT_TRUE(plan_softmax_prefill_cuda(8, 1000, 128, DType::bfloat16).needs_shared_opt_in());  // 85 KiB
}

// A loaded key tile skips the mask only when every query of the tile sees every key of it; a
// masked tile has a key some query must not see.
TEST(SoftmaxKvCudaPlan, PrefillMasksExactlyTheTilesWithAHiddenKey) {
  for (std::int64_t tokens : {1, 63, 64, 65, 200, 300}) {
    for (std::int64_t window : {0, 1, 30, 64, 65, 100, 1000}) {
      const SoftmaxPrefillCudaPlan plan = plan_softmax_prefill_cuda(4, 2, tokens, 64, DType::bfloat16, window);
      for (std::int64_t tile = 0; tile < plan.query_tiles; ++tile) {
        for (std::int64_t key_tile = plan.first_key_tile(tile); key_tile <= tile; ++key_tile) {
          SCOPED_TRACE(::testing::Message() << "L " << tokens << " W " << window << " tile " << tile << " key tile "
                                            << key_tile);
          bool real_pair_hidden = false, any_pair_hidden = false;
          for (std::int64_t t = tile * 64; t < (tile + 1) * 64; ++t) {
            for (std::int64_t key = key_tile * 64; key < (key_tile + 1) * 64; ++key) {
              const bool visible = key <= t && key > t - plan.band() && key < tokens;
              any_pair_hidden = any_pair_hidden || !visible;
              real_pair_hidden = real_pair_hidden || (!visible && t < tokens);
            }
          }
          const bool masked = plan.key_tile_masked(tile, key_tile);
          if (real_pair_hidden) {
            EXPECT_TRUE(masked);
          }
          if (masked) {
            EXPECT_TRUE(any_pair_hidden);
          }
        }
      }
    }
  }
}

TEST(SoftmaxKvCudaPlan, PrefillSimtLayoutFitsEveryHeadDim) {
  for (DType dtype : {DType::float32, DType::bfloat16}) {
    const std::int64_t step = kVectorBytes / static_cast<std::int64_t>(dtype_bytes(dtype));
    for (std::int64_t dim = step; dim <= 256; dim += step) {
      const SoftmaxPrefillCudaPlan plan = plan_softmax_prefill_cuda(8, 100, dim, dtype);
      if (plan.path != SoftmaxPrefillPath::simt) continue;
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " head_dim " << dim);
      EXPECT_EQ(plan.query_rows, 32);  // 4 warps x 8 rows
      EXPECT_EQ(plan.keys_per_tile, 32);  // one key per lane
      EXPECT_EQ(plan.ld_k % 2, 1);  // lane j reads row j: an odd pitch spreads the lanes over the banks
      EXPECT_EQ(plan.ld_q % 4, 0);  // float4 reads of q
      expect_region(plan.q_offset, plan.k_offset, 32, plan.ld_q, 4);
      expect_region(plan.k_offset, plan.v_offset, 32, plan.ld_k, 4);
      expect_region(plan.v_offset, plan.shared_bytes, 32, plan.ld_v, 4);
      EXPECT_LE(plan.shared_bytes, kMaxSharedBytesOptIn);
    }
  }
  EXPECT_FALSE(plan_softmax_prefill_cuda(8, 100, 64, DType::float32).needs_shared_opt_in());
  EXPECT_TRUE(plan_softmax_prefill_cuda(8, 100, 256, DType::float32).needs_shared_opt_in());
}

TEST(SoftmaxKvCudaPlan, UnsupportedNamesTheAlignmentAndLimits) {
  auto reason = [](std::int64_t heads, std::int64_t dim, DType dtype) {
    return softmax_kv_cuda_unsupported(small_cell(heads, dim, 512, dtype));
  };
  EXPECT_EQ(reason(8, 64, DType::bfloat16), std::nullopt);
  EXPECT_EQ(reason(8, 256, DType::float32), std::nullopt);
  EXPECT_EQ(reason(8, 36, DType::float32), std::nullopt);  // 144-byte rows
  EXPECT_EQ(reason(8, 40, DType::bfloat16), std::nullopt);  // 80-byte rows (SIMT prefill)
  const auto bf16_misaligned = reason(8, 60, DType::bfloat16);
  ASSERT_TRUE(bf16_misaligned.has_value());
  EXPECT_NE(bf16_misaligned->find("multiple of 8"), std::string::npos) << *bf16_misaligned;
  const auto fp32_misaligned = reason(8, 62, DType::float32);
  ASSERT_TRUE(fp32_misaligned.has_value());
  EXPECT_NE(fp32_misaligned->find("multiple of 4"), std::string::npos) << *fp32_misaligned;
  EXPECT_TRUE(reason(8, 264, DType::bfloat16).has_value());
  EXPECT_EQ(reason(65535, 64, DType::bfloat16), std::nullopt);
  EXPECT_TRUE(reason(65536, 64, DType::bfloat16).has_value());  // grid.y
}

TEST(SoftmaxKvCudaPlan, SlidingWindowReportsTheCudaBackendAndSoftmaxKvLimits) {
  const Mechanism* sliding = find_mechanism("sliding_window");
  ASSERT_NE(sliding, nullptr);
  testing::expect_lists_cuda_exactly_when_built(*sliding);
  Cell misaligned = small_cell(8, 60, 512, DType::bfloat16);
  misaligned.mechanism = "sliding_window";
  EXPECT_EQ(sliding->unsupported_on(misaligned, "cpu"), std::nullopt);
  EXPECT_EQ(sliding->unsupported_on(misaligned, "cuda"), softmax_kv_cuda_unsupported(misaligned));
  EXPECT_TRUE(sliding->unsupported_on(misaligned, "cuda").has_value());
}

TEST(SoftmaxKvCudaPlan, MechanismReportsTheCudaBackendAndItsLimits) {
  const Mechanism* softmax = find_mechanism("softmax_kv");
  ASSERT_NE(softmax, nullptr);
  testing::expect_lists_cuda_exactly_when_built(*softmax);
  const Cell misaligned = small_cell(8, 60, 512, DType::bfloat16);
  EXPECT_EQ(softmax->unsupported(misaligned), std::nullopt);  // the CPU kernels take it
  EXPECT_EQ(softmax->unsupported_on(misaligned, "cpu"), std::nullopt);
  EXPECT_EQ(softmax->unsupported_on(misaligned, "cuda"), softmax_kv_cuda_unsupported(misaligned));
  EXPECT_TRUE(softmax->unsupported_on(misaligned, "cuda").has_value());
  EXPECT_EQ(softmax->unsupported_on(small_cell(8, 64, 512, DType::bfloat16), "cuda"), std::nullopt);
}

}  // namespace
}  // namespace arch_bench
