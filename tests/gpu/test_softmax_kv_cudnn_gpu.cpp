// softmax_kv on cuDNN's fused attention (--softmax-impl cudnn) on a real device against the fp64
// reference: decode (one query against the cache of L + 1 rows, the new row appended by the step)
// and causal prefill, multi-head and grouped-query. Skips without a usable CUDA device, and without
// a usable cuDNN (a build without the variant, or no libcudnn.so.9 to open: see ARCH_BENCH_CUDNN_LIB).
#include <gtest/gtest.h>

#include <string>

#include "mechanisms/common/cudnn_library.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/registry.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {
using testing::small_cell;

#define ARCH_BENCH_CUDNN_OR_SKIP()                                                                   \
  if (!cudnn_library().usable()) GTEST_SKIP() << "cuDNN not usable: " << cudnn_library().reason

std::string kernel_of(const PreparedCell& cell) {
  const auto* named = dynamic_cast<const NamesGpuKernel*>(&cell);
  return named ? named->gpu_kernel() : "";
}

Cell cudnn_cell(std::int64_t heads, std::int64_t dim, std::int64_t length, Phase phase, std::int64_t kv_heads) {
  Cell cell = small_cell(heads, dim, length, DType::bfloat16, phase);
  cell.mechanism = "softmax_kv";
  cell.batch = 2;
  cell.options.set("softmax_impl", std::string("cudnn"));
  cell.options.set("kv_heads", kv_heads);
  return cell;
}

TEST(SoftmaxKvCudnnGpu, DecodeAndPrefillMatchTheReferenceAndRepeat) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  ARCH_BENCH_CUDNN_OR_SKIP();
  const Mechanism* softmax = find_mechanism("softmax_kv");
  ASSERT_NE(softmax, nullptr);
  for (std::int64_t dim : {64, 128}) {
    for (std::int64_t kv_heads : {0, 2, 1}) {  // multi-head, grouped-query (4 per K/V head), multi-query
      for (Phase phase : {Phase::decode, Phase::prefill}) {
        for (std::int64_t length : {1, 100, 1000, 4100}) {
          const Cell cell = cudnn_cell(8, dim, length, phase, kv_heads);
          SCOPED_TRACE(::testing::Message() << "head_dim " << dim << " kv_heads " << kv_heads << " "
                                            << phase_name(phase) << " L=" << length);
          ASSERT_EQ(softmax->unsupported_on(cell, "cuda"), std::nullopt);
          auto prepared = softmax->prepare(cell, 17, *backend);
          EXPECT_EQ(kernel_of(*prepared).rfind("cudnn_sdpa (cuDNN 9.", 0), 0u) << kernel_of(*prepared);
          const std::int64_t allocations = backend->allocator().allocation_count();
          prepared->run();
          const Accuracy first = prepared->check();
          EXPECT_TRUE(first.output_finite);  // decode: the poisoned row L became the new token's
          EXPECT_LT(first.max_rel_error, dtype_tolerance(DType::bfloat16));
          EXPECT_GT(first.rows_checked, 0);
          prepared->run();  // a repeated sample rewrites the same cache row: same output
          prepared->run();
          EXPECT_EQ(prepared->check().max_abs_error, first.max_abs_error);
          EXPECT_EQ(backend->allocator().allocation_count(), allocations);  // run() allocates nothing
        }
      }
    }
  }
}

// auto takes cuDNN for bfloat16 and keeps fp32 on the hand kernels, and says so in the row's name.
TEST(SoftmaxKvCudnnGpu, AutoPicksCudnnForBf16AndHandForFp32) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  ARCH_BENCH_CUDNN_OR_SKIP();
  const Mechanism* softmax = find_mechanism("softmax_kv");
  for (DType dtype : {DType::bfloat16, DType::float32}) {
    Cell cell = small_cell(4, 64, 256, dtype, Phase::prefill);
    cell.mechanism = "softmax_kv";
    auto prepared = softmax->prepare(cell, 3, *backend);
    const std::string kernel = kernel_of(*prepared);
    if (dtype == DType::bfloat16) {
      EXPECT_EQ(kernel.rfind("cudnn_sdpa", 0), 0u) << kernel;
    } else {
      EXPECT_EQ(kernel.rfind("hand: prefill simt (auto: ", 0), 0u) << kernel;
      EXPECT_NE(kernel.find("bfloat16"), std::string::npos) << kernel;
    }
    prepared->run();
    EXPECT_LT(prepared->check().max_rel_error, dtype_tolerance(dtype)) << dtype_name(dtype);
  }
}

// The two implementations agree with the reference on the same cell (same seed, same inputs).
TEST(SoftmaxKvCudnnGpu, HandAndCudnnAgreeOnTheSameCell) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  ARCH_BENCH_CUDNN_OR_SKIP();
  const Mechanism* softmax = find_mechanism("softmax_kv");
  for (Phase phase : {Phase::decode, Phase::prefill}) {
    for (const char* impl : {"hand", "cudnn"}) {
      Cell cell = cudnn_cell(8, 64, 2048, phase, 0);
      cell.options.set("softmax_impl", std::string(impl));
      auto prepared = softmax->prepare(cell, 11, *backend);
      EXPECT_EQ(kernel_of(*prepared).rfind(std::string(impl) == "hand" ? "hand" : "cudnn_sdpa", 0), 0u);
      prepared->run();
      const Accuracy accuracy = prepared->check();
      EXPECT_TRUE(accuracy.output_finite) << impl << " " << phase_name(phase);
      EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(DType::bfloat16)) << impl << " " << phase_name(phase);
    }
  }
}

}  // namespace
}  // namespace arch_bench
