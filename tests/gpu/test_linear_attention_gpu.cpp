// linear_attention CUDA kernels on a real device: the registered mechanism's CUDA cells against
// the fp64 reference (decode and prefill, bf16 and fp32, elu and relu, L around chunk boundaries),
// and the kernels against each other: a decode at position L equals the last row of a prefill over
// L + 1 tokens, and a prefill continues from the state it is given. Skipped without a device.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "mechanisms/registry.hpp"
#include "gpu/cuda_cell_checks.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/linear_attention/cuda.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "gpu/device_tokens.hpp"
#include "support/head_rows.hpp"
#endif

namespace arch_bench {
namespace {

using testing::small_cell;

using CellCase = std::tuple<Phase, DType, std::string, std::int64_t>;

class LinearAttentionGpuCells : public ::testing::TestWithParam<CellCase> {};

TEST_P(LinearAttentionGpuCells, RunOnceAndMatchTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [phase, dtype, map, length] = GetParam();
  Cell cell = small_cell(4, 64, length, dtype, phase);
  cell.mechanism = "linear_attention";
  cell.options.set("feature_map", std::string(map));
  testing::expect_cuda_cell_matches_fp64_reference(*backend, cell, phase == Phase::decode ? 4 : 4 * length);
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
  for (const std::int64_t dim : {16, 48, 100, 256}) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      Cell cell = small_cell(2, dim, 130, DType::float32, phase);
      cell.mechanism = "linear_attention";
      testing::expect_cell_matches_fp64_reference(*backend, cell, 12, std::to_string(dim) + " " + phase_name(phase));
    }
  }
}

#if ARCH_BENCH_HAVE_CUDA

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
  testing::DeviceTokens<T> x(cuda, in, first, rows);
  Buffer<float> chunk_states(cuda.allocator(), static_cast<std::size_t>(plan.workspace_state_elements));
  Buffer<float> chunk_sums(cuda.allocator(), static_cast<std::size_t>(plan.workspace_sum_elements));
  launch_linear_attention_prefill<T>(plan, map, x.q.data(), x.k.data(), x.v.data(), carried.state.data(),
                                     carried.normalizer.data(), x.out.data(), chunk_states.data(), chunk_sums.data(),
                                     cuda.stream());
  return x.output(cuda);
}

// One decode step of token `t`, in place on `carried`; returns out [bh, dim].
template <class T>
std::vector<float> decode(CudaBackend& cuda, const AttentionInputs& in, std::int64_t t, FeatureMap map,
                          DeviceState& carried) {
  const LinearDecodePlan plan = plan_linear_attention_decode(in.batch_heads, in.dim, in.dim);
  testing::DeviceTokens<T> x(cuda, in, t, 1);
  launch_linear_attention_decode<T>(plan, map, x.q.data(), x.k.data(), x.v.data(), carried.state.data(),
                                    carried.normalizer.data(), x.out.data(), cuda.stream());
  return x.output(cuda);
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
  const std::vector<float> last = testing::row_of_every_head(rows, in.batch_heads, length + 1, length, in.dim);
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
  EXPECT_LT(testing::relative_max_error(testing::join_rows(head, 100, tail, 60, in.batch_heads, in.dim), all), 1e-5);
}

// The bf16 prefill on tensor cores (cuda_tensor_core.cu) over tokens [first, first + rows),
// continuing from `carried`; returns out [bh, rows, dim].
std::vector<float> tensor_core_prefill(CudaBackend& cuda, const AttentionInputs& in, std::int64_t first,
                                       std::int64_t rows, FeatureMap map, DeviceState& carried) {
  const ChunkScalarDecayPlan plan = plan_linear_attention_tensor_core_prefill(in.batch_heads, rows, in.dim);
  configure_linear_attention_tensor_core_prefill(plan);
  testing::DeviceTokens<bf16> x(cuda, in, first, rows);
  Buffer<float> extended(cuda.allocator(), static_cast<std::size_t>(linear_attention_extended_state_elements(plan)));
  Buffer<float> chunk_states(cuda.allocator(), static_cast<std::size_t>(plan.workspace_state_elements));
  Buffer<float> chunk_log_decay(cuda.allocator(), static_cast<std::size_t>(plan.workspace_decay_elements));
  poison(cuda, extended.data(), extended.bytes());  // scratch: the pack must overwrite every element
  launch_linear_attention_tensor_core_prefill(plan, map, x.q.data(), x.k.data(), x.v.data(), carried.state.data(),
                                              carried.normalizer.data(), x.out.data(), extended.data(),
                                              chunk_states.data(), chunk_log_decay.data(), cuda.stream());
  return x.output(cuda);
}

std::vector<float> device_floats(CudaBackend& cuda, const Buffer<float>& buffer) {
  return download<float>(cuda, buffer.data(), static_cast<std::int64_t>(buffer.size()));
}

TEST(LinearAttentionGpu, TensorCorePrefillEqualsTheSimtPrefillOutputsAndFinalState) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t dim : {16, 64, 112}) {
    for (const std::int64_t length : {1, 63, 64, 65, 1000}) {
      for (const FeatureMap map : {FeatureMap::elu_plus_one, FeatureMap::relu_plus_one}) {
        const AttentionInputs in = make_attention_inputs(small_cell(3, dim, length, DType::bfloat16), length, 41);
        DeviceState simt(cuda, in), tensor(cuda, in);
        const std::vector<float> expected = prefill<bf16>(cuda, in, 0, length, map, simt);
        const std::vector<float> got = tensor_core_prefill(cuda, in, 0, length, map, tensor);
        const std::string where = feature_map_name(map) + " d=" + std::to_string(dim) + " L=" + std::to_string(length);
        EXPECT_LT(testing::relative_max_error(got, expected), dtype_tolerance(DType::bfloat16)) << where;
        EXPECT_LT(testing::relative_max_error(device_floats(cuda, tensor.state), device_floats(cuda, simt.state)),
                  dtype_tolerance(DType::bfloat16))
            << where;
        EXPECT_LT(testing::relative_max_error(device_floats(cuda, tensor.normalizer), device_floats(cuda, simt.normalizer)),
                  dtype_tolerance(DType::bfloat16))
            << where;
      }
    }
  }
}

TEST(LinearAttentionGpu, TensorCorePrefillContinuesFromTheStateItIsGivenAndTheDecodeFromIt) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const AttentionInputs in = make_attention_inputs(small_cell(2, 64, 0, DType::bfloat16), 161, 43);
  DeviceState whole(cuda, in);
  const std::vector<float> all = prefill<bf16>(cuda, in, 0, 161, FeatureMap::elu_plus_one, whole);
  // Tokens [0, 100) then [100, 160) on tensor cores carrying (S, z), then token 160 by the decode step.
  DeviceState carried(cuda, in);
  const std::vector<float> head = tensor_core_prefill(cuda, in, 0, 100, FeatureMap::elu_plus_one, carried);
  const std::vector<float> tail = tensor_core_prefill(cuda, in, 100, 60, FeatureMap::elu_plus_one, carried);
  const std::vector<float> step = decode<bf16>(cuda, in, 160, FeatureMap::elu_plus_one, carried);
  const std::vector<float> first_160 = testing::join_rows(head, 100, tail, 60, in.batch_heads, in.dim);
  std::vector<float> expected_160;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    expected_160.insert(expected_160.end(), all.begin() + bh * 161 * in.dim, all.begin() + (bh * 161 + 160) * in.dim);
  }
  EXPECT_LT(testing::relative_max_error(first_160, expected_160), dtype_tolerance(DType::bfloat16));
  EXPECT_LT(testing::relative_max_error(step, testing::row_of_every_head(all, in.batch_heads, 161, 160, in.dim)),
            dtype_tolerance(DType::bfloat16));
}

TEST(LinearAttentionGpu, TensorCoreWideAndNarrowHeadCellsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  for (const std::int64_t dim : {16, 112}) {
    Cell cell = small_cell(2, dim, 300, DType::bfloat16, Phase::prefill);
    cell.mechanism = "linear_attention";
    testing::expect_cuda_cell_matches_fp64_reference(*backend, cell, 2 * 300);
  }
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
