// sliding_window on CUDA (softmax_kv's kernels with a window: decode over the ring, banded prefill)
// against the fp64 banded reference, and against softmax_kv where the window covers the sequence.
// Every test skips without a usable CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "mechanisms/registry.hpp"
#include "gpu/cuda_cell_checks.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {
using testing::small_cell;

struct Shape {
  DType dtype;
  std::int64_t head_dim;
};

Cell window_cell(std::int64_t heads, const Shape& shape, std::int64_t length, Phase phase, std::int64_t window,
                 std::int64_t kv_heads) {
  Cell cell = small_cell(heads, shape.head_dim, length, shape.dtype, phase);
  cell.mechanism = "sliding_window";
  cell.options.set("window", window);
  cell.options.set("kv_heads", kv_heads);
  return cell;
}

// Windows of one token, shorter than a tile, tile-sized, not a multiple of a tile, and longer than
// the sequence; contexts shorter than the window (ring not yet wrapped) and longer (wrapped, the
// new token overwriting the oldest slot); the three prefill paths (bf16 mma at head_dim 64 and 128,
// wmma at 96, SIMT) and both decode lane layouts.
TEST(SlidingWindowGpu, PreparedCellsMatchTheBandedReferenceAndRepeat) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  for (const Shape& shape : {Shape{DType::bfloat16, 128}, Shape{DType::bfloat16, 64}, Shape{DType::bfloat16, 96},
                             Shape{DType::bfloat16, 40}, Shape{DType::float32, 64}, Shape{DType::float32, 256}}) {
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      for (std::int64_t window : {1, 7, 64, 100, 5000}) {
        for (std::int64_t length : {1, 100, 1000, 4100}) {
          const Cell cell = window_cell(4, shape, length, phase, window, 2);
          SCOPED_TRACE(::testing::Message() << dtype_name(shape.dtype) << " head_dim " << shape.head_dim << " "
                                            << phase_name(phase) << " W=" << window << " L=" << length);
          // Run twice: the step rewrites the same ring slot, so the same output.
          ASSERT_NO_FATAL_FAILURE(testing::expect_cuda_cell_matches_and_repeats(*backend, cell, 31, 1));
        }
      }
    }
  }
}

// With W >= L + 1 nothing leaves the window: sliding_window's CUDA cells compute softmax_kv's, on the
// same seeded inputs, to the same error against the (then identical) reference.
TEST(SlidingWindowGpu, WindowCoveringTheSequenceIsSoftmaxKv) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const Mechanism* sliding = find_mechanism("sliding_window");
  const Mechanism* softmax = find_mechanism("softmax_kv");
  for (Phase phase : {Phase::decode, Phase::prefill}) {
    for (std::int64_t length : {100, 3000}) {
      const Shape shape{DType::bfloat16, 64};
      const Cell windowed = window_cell(8, shape, length, phase, length + 1, 2);
      Cell full = small_cell(8, shape.head_dim, length, shape.dtype, phase);
      full.mechanism = "softmax_kv";
      full.options.set("kv_heads", 2);
      auto a = sliding->prepare(windowed, 37, *backend);
      auto b = softmax->prepare(full, 37, *backend);
      a->run();
      b->run();
      EXPECT_EQ(a->check().max_abs_error, b->check().max_abs_error) << phase_name(phase) << " L=" << length;
    }
  }
}

// Grouped-query shapes (the 32 query heads over 8 K/V heads, and multi-query) on a wrapped
// ring long enough to split over the SMs.
TEST(SlidingWindowGpu, GroupedQueryDecodeOverAWrappedRing) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const Mechanism* sliding = find_mechanism("sliding_window");
  for (std::int64_t kv_heads : {8, 1}) {
    const Cell cell = window_cell(32, Shape{DType::bfloat16, 128}, 9000, Phase::decode, 4096, kv_heads);
    auto prepared = sliding->prepare(cell, 41, *backend);
    prepared->run();
    const Accuracy accuracy = prepared->check();
    EXPECT_TRUE(accuracy.output_finite) << "kv_heads " << kv_heads;
    EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(DType::bfloat16)) << "kv_heads " << kv_heads;
  }
}

}  // namespace
}  // namespace arch_bench
