// linear_attention CUDA kernels on a real device: the registered mechanism's CUDA cells against
// the fp64 reference (decode and prefill, bf16 and fp32, elu and relu, L around chunk boundaries),
// and the kernels against each other: a decode at position L equals the last row of a prefill over
// L + 1 tokens, and a prefill continues from the state it is given. Skipped without a device.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "mechanisms/registry.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/linear_attention/cuda.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#endif

namespace arch_bench {
namespace {

using testing::small_cell;

using CellCase = std::tuple<Phase, DType, std::string, std::int64_t>;

class LinearAttentionGpuCells : public ::testing::TestWithParam<CellCase> {};

TEST_P(LinearAttentionGpuCells, RunOnceAndMatchTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [phase, dtype, map, length] = GetParam();
  const Mechanism* linear = find_mechanism("linear_attention");
  ASSERT_NE(linear, nullptr);
  Cell cell = small_cell(4, 64, length, dtype, phase);
  cell.mechanism = "linear_attention";
  cell.options.set("feature_map", std::string(map));
  ASSERT_FALSE(linear->unsupported_on(cell, "cuda"));
  auto prepared = linear->prepare(cell, 11, *backend);
  const std::int64_t allocations = backend->allocator().allocation_count();
  prepared->run();
  EXPECT_EQ(backend->allocator().allocation_count(), allocations);  // run() allocates nothing
  backend->synchronize();
  const Accuracy accuracy = prepared->check();
  EXPECT_TRUE(accuracy.output_finite);  // the output was poisoned with NaN before the run
  EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(dtype));
  EXPECT_EQ(accuracy.rows_checked, phase == Phase::decode ? 4 : 4 * length);
}

INSTANTIATE_TEST_SUITE_P(
    Cells, LinearAttentionGpuCells,
    ::testing::Combine(::testing::Values(Phase::decode, Phase::prefill),
                       ::testing::Values(DType::float32, DType::bfloat16), ::testing::Values("elu", "relu"),
                       ::testing::Values<std::int64_t>(1, 63, 64, 65, 1000)),
    [](const ::testing::TestParamInfo<CellCase>& info) {
      return phase_name(std::get<0>(info.param)) + "_" + dtype_name(std::get<1>(info.param)) + "_" +
             std::get<2>(info.param) + "_L" + std::to_string(std::get<3>(info.param));
    });

TEST(LinearAttentionGpu, WideAndOddHeadsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const Mechanism* linear = find_mechanism("linear_attention");
  for (const std::int64_t dim : {16, 48, 100, 256}) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      Cell cell = small_cell(2, dim, 130, DType::float32, phase);
      cell.mechanism = "linear_attention";
      auto prepared = linear->prepare(cell, 12, *backend);
      prepared->run();
      const Accuracy accuracy = prepared->check();
      EXPECT_TRUE(accuracy.output_finite) << dim << " " << phase_name(phase);
      EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(DType::float32)) << dim << " " << phase_name(phase);
    }
  }
}

#if ARCH_BENCH_HAVE_CUDA

// Rows [first, first + rows) of every head of a [batch_heads, tokens, dim] tensor.
std::vector<float> head_rows(const AttentionInputs& in, const std::vector<float>& tensor, std::int64_t first,
                             std::int64_t rows) {
  std::vector<float> out;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    const float* begin = tensor.data() + (bh * in.tokens + first) * in.dim;
    out.insert(out.end(), begin, begin + rows * in.dim);
  }
  return out;
}

// Device (S, z) of every head, zeroed.
struct DeviceState {
  DeviceState(CudaBackend& cuda, const AttentionInputs& in)
      : state(cuda.allocator(), static_cast<std::size_t>(in.batch_heads * in.dim * in.dim)),
        normalizer(cuda.allocator(), static_cast<std::size_t>(in.batch_heads * in.dim)) {
    zero_async(cuda, state.data(), state.bytes());
    zero_async(cuda, normalizer.data(), normalizer.bytes());
  }
  Buffer<float> state, normalizer;
};

// Prefill of tokens [first, first + rows), continuing from `carried`; returns out [bh, rows, dim].
template <class T>
std::vector<float> prefill(CudaBackend& cuda, const AttentionInputs& in, std::int64_t first, std::int64_t rows,
                           FeatureMap map, DeviceState& carried) {
  const LinearPrefillPlan plan = plan_linear_attention_prefill(in.batch_heads, rows, in.dim, in.dim);
  const std::int64_t count = in.batch_heads * rows * in.dim;
  Buffer<T> q(cuda.allocator(), static_cast<std::size_t>(count)), k(cuda.allocator(), q.size()),
      v(cuda.allocator(), q.size()), out(cuda.allocator(), q.size());
  Buffer<float> chunk_states(cuda.allocator(), static_cast<std::size_t>(plan.workspace_state_elements));
  Buffer<float> chunk_sums(cuda.allocator(), static_cast<std::size_t>(plan.workspace_sum_elements));
  upload<T>(cuda, head_rows(in, in.q, first, rows).data(), count, q.data());
  upload<T>(cuda, head_rows(in, in.k, first, rows).data(), count, k.data());
  upload<T>(cuda, head_rows(in, in.v, first, rows).data(), count, v.data());
  poison(cuda, out.data(), out.bytes());
  launch_linear_attention_prefill<T>(plan, map, q.data(), k.data(), v.data(), carried.state.data(),
                                     carried.normalizer.data(), out.data(), chunk_states.data(), chunk_sums.data(),
                                     cuda.stream());
  cuda.synchronize();
  return download<T>(cuda, out.data(), count);
}

// One decode step of token `t`, in place on `carried`; returns out [bh, dim].
template <class T>
std::vector<float> decode(CudaBackend& cuda, const AttentionInputs& in, std::int64_t t, FeatureMap map,
                          DeviceState& carried) {
  const LinearDecodePlan plan = plan_linear_attention_decode(in.batch_heads, in.dim, in.dim);
  const std::int64_t count = in.batch_heads * in.dim;
  Buffer<T> q(cuda.allocator(), static_cast<std::size_t>(count)), k(cuda.allocator(), q.size()),
      v(cuda.allocator(), q.size()), out(cuda.allocator(), q.size());
  upload<T>(cuda, head_rows(in, in.q, t, 1).data(), count, q.data());
  upload<T>(cuda, head_rows(in, in.k, t, 1).data(), count, k.data());
  upload<T>(cuda, head_rows(in, in.v, t, 1).data(), count, v.data());
  poison(cuda, out.data(), out.bytes());
  launch_linear_attention_decode<T>(plan, map, q.data(), k.data(), v.data(), carried.state.data(),
                                    carried.normalizer.data(), out.data(), cuda.stream());
  cuda.synchronize();
  return download<T>(cuda, out.data(), count);
}

template <class T>
void expect_decode_equals_last_prefill_row(CudaBackend& cuda, DType dtype, FeatureMap map, std::int64_t length) {
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, length, dtype), length + 1, 17);
  DeviceState whole(cuda, in);
  const std::vector<float> rows = prefill<T>(cuda, in, 0, length + 1, map, whole);
  DeviceState stepped(cuda, in);
  if (length > 0) prefill<T>(cuda, in, 0, length, map, stepped);
  const std::vector<float> step = decode<T>(cuda, in, length, map, stepped);
  // The prefill's row L of each head.
  std::vector<float> last;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    const float* row = rows.data() + (bh * (length + 1) + length) * in.dim;
    last.insert(last.end(), row, row + in.dim);
  }
  const std::string where = dtype_name(dtype) + " " + feature_map_name(map) + " L=" + std::to_string(length);
  EXPECT_LT(testing::relative_max_error(step, last), dtype_tolerance(dtype)) << where;
  // Same fp32 state after L + 1 tokens either way.
  const std::vector<float> s_whole = download<float>(cuda, whole.state.data(), static_cast<std::int64_t>(whole.state.size()));
  const std::vector<float> s_step = download<float>(cuda, stepped.state.data(), static_cast<std::int64_t>(stepped.state.size()));
  EXPECT_LT(testing::relative_max_error(s_step, s_whole), 1e-5) << where;
  const std::vector<float> z_whole =
      download<float>(cuda, whole.normalizer.data(), static_cast<std::int64_t>(whole.normalizer.size()));
  const std::vector<float> z_step =
      download<float>(cuda, stepped.normalizer.data(), static_cast<std::int64_t>(stepped.normalizer.size()));
  EXPECT_LT(testing::relative_max_error(z_step, z_whole), 1e-5) << where;
}

TEST(LinearAttentionGpu, DecodeAtLEqualsLastRowOfPrefillOverLPlusOneTokens) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t length : {0, 1, 63, 64, 65, 1000}) {
    for (const FeatureMap map : {FeatureMap::elu_plus_one, FeatureMap::relu_plus_one}) {
      expect_decode_equals_last_prefill_row<float>(cuda, DType::float32, map, length);
      expect_decode_equals_last_prefill_row<bf16>(cuda, DType::bfloat16, map, length);
    }
  }
}

TEST(LinearAttentionGpu, PrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 0, DType::float32), 160, 19);
  DeviceState whole(cuda, in);
  const std::vector<float> all = prefill<float>(cuda, in, 0, 160, FeatureMap::elu_plus_one, whole);
  // Tokens [0, 100) then [100, 160), carrying (S, z): 100 is not a chunk boundary.
  DeviceState carried(cuda, in);
  const std::vector<float> head = prefill<float>(cuda, in, 0, 100, FeatureMap::elu_plus_one, carried);
  const std::vector<float> tail = prefill<float>(cuda, in, 100, 60, FeatureMap::elu_plus_one, carried);
  std::vector<float> joined;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    joined.insert(joined.end(), head.begin() + bh * 100 * in.dim, head.begin() + (bh + 1) * 100 * in.dim);
    joined.insert(joined.end(), tail.begin() + bh * 60 * in.dim, tail.begin() + (bh + 1) * 60 * in.dim);
  }
  EXPECT_LT(testing::relative_max_error(joined, all), 1e-5);
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
