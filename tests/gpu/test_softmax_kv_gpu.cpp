// softmax_kv CUDA kernels on a real device against the fp64 reference, and against each other
// (decode vs prefill, split vs unsplit). Every test skips without a usable CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/registry.hpp"
#if ARCH_BENCH_HAVE_CUDA
#include "mechanisms/softmax_kv/cuda.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#endif
#include "gpu/cuda_cell_checks.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {
using testing::relative_max_error;
using testing::small_cell;

struct Shape {
  DType dtype;
  std::int64_t head_dim;
};

// The three prefill paths (bf16 mma for head_dim 64 and 128, wmma for other multiples of 16 up to
// 128, SIMT otherwise) and both
// decode lane layouts (one and two vectors per lane; idle lanes for non-power-of-two rows).
const Shape kShapes[] = {{DType::bfloat16, 64}, {DType::bfloat16, 128}, {DType::bfloat16, 96},
                         {DType::bfloat16, 256}, {DType::bfloat16, 40}, {DType::float32, 64},
                         {DType::float32, 128},  {DType::float32, 256}, {DType::float32, 36}};

TEST(SoftmaxKvGpu, PreparedCellsMatchTheReferenceAndRepeat) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  for (const Shape& shape : kShapes) {
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      // 1 token, partial tiles, and (decode) a context long enough to split over the SMs.
      for (std::int64_t length : {1, 100, 1000, 4100}) {
        Cell cell = small_cell(2, shape.head_dim, length, shape.dtype, phase);
        cell.mechanism = "softmax_kv";
        cell.options.set("softmax_impl", std::string("hand"));  // these test the hand kernels (auto: cuDNN for bf16)
        SCOPED_TRACE(::testing::Message() << dtype_name(shape.dtype) << " head_dim " << shape.head_dim << " "
                                          << phase_name(phase) << " L=" << length);
        // Then two repeated samples: the same work, the same output.
        ASSERT_NO_FATAL_FAILURE(testing::expect_cuda_cell_matches_and_repeats(*backend, cell, 17, 2));
      }
    }
  }
}

TEST(SoftmaxKvGpu, BatchOneLongContextDecodeSplitsAndMatches) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const Mechanism* softmax = find_mechanism("softmax_kv");
  for (DType dtype : {DType::bfloat16, DType::float32}) {
    Cell cell = small_cell(1, 128, 20000, dtype, Phase::decode);
    cell.mechanism = "softmax_kv";
    cell.options.set("softmax_impl", std::string("hand"));  // these test the hand kernels (auto: cuDNN for bf16)
    auto prepared = softmax->prepare(cell, 5, *backend);
    prepared->run();
    const Accuracy accuracy = prepared->check();
    EXPECT_TRUE(accuracy.output_finite) << dtype_name(dtype);
    EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(dtype)) << dtype_name(dtype);
  }
}

// Grouped-query and multi-query attention (--kv-heads): a decode block holds the queries of its K/V
// head's group and streams that head once, the first slice's block appending the new row. The three prefill paths, both decode lane layouts, a
// context long enough to split; the CPU cells of the same seed give the same reference error scale.
TEST(SoftmaxKvGpu, GroupedQueryAttentionMatchesTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const Mechanism* softmax = find_mechanism("softmax_kv");
  for (const Shape& shape : {Shape{DType::bfloat16, 64}, Shape{DType::bfloat16, 128}, Shape{DType::bfloat16, 96},
                             Shape{DType::bfloat16, 40}, Shape{DType::float32, 128}}) {
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      for (std::int64_t kv_heads : {1, 2, 4}) {
        for (std::int64_t length : {1, 100, 4100}) {
          Cell cell = small_cell(8, shape.head_dim, length, shape.dtype, phase);
          cell.mechanism = "softmax_kv";
          cell.options.set("softmax_impl", std::string("hand"));  // these test the hand kernels (auto: cuDNN for bf16)
          cell.options.set("kv_heads", kv_heads);
          SCOPED_TRACE(::testing::Message() << dtype_name(shape.dtype) << " head_dim " << shape.head_dim << " "
                                            << phase_name(phase) << " kv_heads " << kv_heads << " L=" << length);
          ASSERT_EQ(softmax->unsupported_on(cell, "cuda"), std::nullopt);
          auto prepared = softmax->prepare(cell, 19, *backend);
          prepared->run();
          const Accuracy first = prepared->check();
          EXPECT_TRUE(first.output_finite);
          EXPECT_LT(first.max_rel_error, dtype_tolerance(shape.dtype));
          prepared->run();  // the group's append rewrites the same row: the same output
          EXPECT_EQ(prepared->check().max_abs_error, first.max_abs_error);
        }
      }
    }
  }
}

// Groups that are not a power of two (3: a block holds 4 query slots, one idle) and groups wider
// than one block (12: two slices of 8, the second half full; 16: two full slices), at contexts that
// split and that do not: every query head of the group gets its own output, one block appends.
TEST(SoftmaxKvGpu, GroupsOfAnySizeAreReadOnceAndMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const Mechanism* softmax = find_mechanism("softmax_kv");
  struct Grouping {
    std::int64_t heads, kv_heads;
  };
  for (const Shape& shape : {Shape{DType::bfloat16, 128}, Shape{DType::bfloat16, 64}, Shape{DType::float32, 256}}) {
    for (const Grouping& grouping : {Grouping{6, 2}, Grouping{12, 1}, Grouping{32, 2}, Grouping{32, 8}}) {
      for (std::int64_t length : {1, 100, 4100}) {
        Cell cell = small_cell(grouping.heads, shape.head_dim, length, shape.dtype, Phase::decode);
        cell.mechanism = "softmax_kv";
        cell.options.set("kv_heads", grouping.kv_heads);
        SCOPED_TRACE(::testing::Message() << dtype_name(shape.dtype) << " head_dim " << shape.head_dim << " heads "
                                          << grouping.heads << " kv_heads " << grouping.kv_heads << " L=" << length);
        auto prepared = softmax->prepare(cell, 29, *backend);
        prepared->run();
        const Accuracy first = prepared->check();
        EXPECT_TRUE(first.output_finite);
        EXPECT_LT(first.max_rel_error, dtype_tolerance(shape.dtype));
        prepared->run();
        EXPECT_EQ(prepared->check().max_abs_error, first.max_abs_error);
      }
    }
  }
}

// The direct-launch checks below need the CUDA launchers themselves: only in builds with nvcc.
#if ARCH_BENCH_HAVE_CUDA
// Device copies of one cell's inputs over `tokens` tokens, and launchers around them.
template <class T>
class DeviceAttention {
 public:
  DeviceAttention(CudaBackend& backend, const AttentionInputs& in)
      : backend_(backend),
        in_(in),
        q_(backend.allocator(), in.q.size()),
        k_(backend.allocator(), in.k.size()),
        v_(backend.allocator(), in.v.size()) {
    upload<T>(backend, in.q.data(), static_cast<std::int64_t>(in.q.size()), q_.data());
    upload<T>(backend, in.k.data(), static_cast<std::int64_t>(in.k.size()), k_.data());
    upload<T>(backend, in.v.data(), static_cast<std::int64_t>(in.v.size()), v_.data());
  }

  // Causal prefill over all in.tokens tokens: [batch_heads, tokens, dim].
  std::vector<float> prefill(DType dtype) {
    const SoftmaxPrefillCudaPlan plan = plan_softmax_prefill_cuda(in_.batch_heads, in_.tokens, in_.dim, dtype);
    Buffer<T> out(backend_.allocator(), in_.q.size());
    poison(backend_, out.data(), out.bytes());
    configure_softmax_prefill<T>(plan);
    launch_softmax_prefill<T>(plan, q_.data(), k_.data(), v_.data(), out.data(), backend_.stream());
    return download<T>(backend_, out.data(), static_cast<std::int64_t>(out.size()));
  }

  // Decode of the last token over a cache holding tokens 0..tokens-2 (its last row poisoned, so
  // the kernel must append k_new/v_new): [batch_heads, dim]; `appended_keys` receives cache row L.
  // `splits` > 0 replaces the planned split count (1: the split kernel writes the output itself).
  std::vector<float> decode(DType dtype, int multiprocessors, std::vector<float>* appended_keys = nullptr,
                            std::int64_t splits = 0) {
    const std::int64_t bh = in_.batch_heads, dim = in_.dim, tokens = in_.tokens, position = tokens - 1;
    SoftmaxDecodeCudaPlan plan = plan_softmax_decode_cuda(bh, 1, dim, dtype, tokens, tokens, multiprocessors);
    if (splits > 0) plan.splits = splits;
    Buffer<T> k_cache(backend_.allocator(), in_.k.size()), v_cache(backend_.allocator(), in_.v.size());
    Buffer<T> q(backend_.allocator(), bh * dim), k_new(backend_.allocator(), bh * dim),
        v_new(backend_.allocator(), bh * dim), out(backend_.allocator(), bh * dim);
    Buffer<float> workspace(backend_.allocator(), plan.workspace_floats());
    poison(backend_, k_cache.data(), k_cache.bytes());
    poison(backend_, v_cache.data(), v_cache.bytes());
    poison(backend_, out.data(), out.bytes());
    std::vector<float> q_rows, k_rows, v_rows;
    for (std::int64_t h = 0; h < bh; ++h) {
      const std::int64_t base = h * tokens * dim;
      upload<T>(backend_, in_.k.data() + base, position * dim, k_cache.data() + base);
      upload<T>(backend_, in_.v.data() + base, position * dim, v_cache.data() + base);
      q_rows.insert(q_rows.end(), in_.q_at(h, position), in_.q_at(h, position) + dim);
      k_rows.insert(k_rows.end(), in_.k_at(h, position), in_.k_at(h, position) + dim);
      v_rows.insert(v_rows.end(), in_.v_at(h, position), in_.v_at(h, position) + dim);
    }
    upload<T>(backend_, q_rows.data(), bh * dim, q.data());
    upload<T>(backend_, k_rows.data(), bh * dim, k_new.data());
    upload<T>(backend_, v_rows.data(), bh * dim, v_new.data());
    launch_softmax_decode<T>(plan, q.data(), k_new.data(), v_new.data(), k_cache.data(), v_cache.data(), position,
                             workspace.data(), out.data(), backend_.stream());
    if (appended_keys != nullptr) {
      const std::vector<float> cache = download<T>(backend_, k_cache.data(), static_cast<std::int64_t>(k_cache.size()));
      appended_keys->clear();
      for (std::int64_t h = 0; h < bh; ++h) {
        const float* row = cache.data() + (h * tokens + position) * dim;
        appended_keys->insert(appended_keys->end(), row, row + dim);
      }
    }
    return download<T>(backend_, out.data(), bh * dim);
  }

 private:
  CudaBackend& backend_;
  const AttentionInputs& in_;
  Buffer<T> q_, k_, v_;
};

template <class T>
void expect_decode_equals_last_prefill_row(CudaBackend& backend, DType dtype, std::int64_t dim, std::int64_t length,
                                           double tolerance) {
  SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " head_dim " << dim << " L=" << length);
  const AttentionInputs in = make_attention_inputs(small_cell(3, dim, length, dtype), length + 1, 23);
  DeviceAttention<T> device(backend, in);
  std::vector<float> appended;
  const std::vector<float> decoded = device.decode(dtype, backend.device().multiprocessors, &appended);
  const std::vector<float> prefill = device.prefill(dtype);
  std::vector<float> last_rows, new_keys;
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    const float* row = prefill.data() + (h * in.tokens + length) * in.dim;
    last_rows.insert(last_rows.end(), row, row + in.dim);
    new_keys.insert(new_keys.end(), in.k_at(h, length), in.k_at(h, length) + in.dim);
  }
  EXPECT_LT(relative_max_error(decoded, last_rows), tolerance);
  EXPECT_EQ(appended, new_keys);  // the step appended k_new at row L, bit for bit
}

// The register-resident mma prefill (bf16 head_dim 64 and 128) on every output row, not the cells'
// spread of 64: one token, a tile less one, one tile, one more, and a partial last tile after many
// (every warp's rows, the diagonal tile's mask, the zero-filled rows past the last token).
TEST(SoftmaxKvGpu, MmaPrefillMatchesEveryRowOfTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (std::int64_t dim : {64, 128}) {
    for (std::int64_t length : {1, 63, 64, 65, 777}) {
      SCOPED_TRACE(::testing::Message() << "head_dim " << dim << " L=" << length);
      ASSERT_EQ(plan_softmax_prefill_cuda(3, length, dim, DType::bfloat16).path, SoftmaxPrefillPath::mma_bf16);
      const AttentionInputs in = make_attention_inputs(small_cell(3, dim, length, DType::bfloat16), length, 29);
      DeviceAttention<bf16> device(cuda, in);
      const std::vector<float> out = device.prefill(DType::bfloat16);
      double max_error = 0.0, max_ref = 0.0;
      for (std::int64_t h = 0; h < in.batch_heads; ++h) {
        const MatrixD ref = softmax_attention_reference(in.head_matrix(in.q, h, length),
                                                        in.head_matrix(in.k, h, length),
                                                        in.head_matrix(in.v, h, length));
        for (std::int64_t t = 0; t < length; ++t) {
          for (std::int64_t c = 0; c < dim; ++c) {
            const double got = out[static_cast<std::size_t>((h * length + t) * dim + c)];
            ASSERT_TRUE(std::isfinite(got)) << "head " << h << " row " << t << " channel " << c;
            max_error = std::max(max_error, std::abs(got - ref(t, c)));
            max_ref = std::max(max_ref, std::abs(ref(t, c)));
          }
        }
      }
      EXPECT_LT(max_error / max_ref, dtype_tolerance(DType::bfloat16));
    }
  }
}

TEST(SoftmaxKvGpu, DecodeAtLEqualsLastRowOfPrefillOverLPlusOneTokens) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (std::int64_t length : {0, 1, 63, 64, 700, 3000}) {
    expect_decode_equals_last_prefill_row<float>(cuda, DType::float32, 64, length, 1e-5);
    expect_decode_equals_last_prefill_row<float>(cuda, DType::float32, 256, length, 1e-5);
    // bf16: both outputs are rounded to bf16 and the prefill's P is bf16 on tensor cores.
    expect_decode_equals_last_prefill_row<bf16>(cuda, DType::bfloat16, 128, length, dtype_tolerance(DType::bfloat16));
    expect_decode_equals_last_prefill_row<bf16>(cuda, DType::bfloat16, 256, length, dtype_tolerance(DType::bfloat16));
  }
}

TEST(SoftmaxKvGpu, SplitDecodeEqualsUnsplit) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const std::int64_t length = 10000;
  const AttentionInputs in = make_attention_inputs(small_cell(1, 128, length, DType::float32), length + 1, 9);
  ASSERT_GT(plan_softmax_decode_cuda(1, 1, 128, DType::float32, length + 1, length + 1, 1000).splits, 100);
  DeviceAttention<float> device(cuda, in);
  const std::vector<float> unsplit = device.decode(DType::float32, 1000, nullptr, 1);
  EXPECT_LT(relative_max_error(device.decode(DType::float32, 1000), unsplit), 1e-5);
  EXPECT_LT(relative_max_error(device.decode(DType::float32, 1000, nullptr, 2), unsplit), 1e-5);
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
