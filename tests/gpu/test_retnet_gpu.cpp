// retnet CUDA kernels on a real device: the registered mechanism's CUDA cells against the fp64
// reference (decode and prefill, bf16 and fp32, L around the 16-token stage), odd and wide heads,
// and the kernel against itself: a decode at position L equals the last row of a prefill over
// L + 1 tokens with the same final state, and a prefill continues from the state it is given.
// Skipped without a device.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "mechanisms/registry.hpp"
#include "gpu/cuda_cell_checks.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "gpu/column_recurrence_gpu_checks.hpp"
#include "mechanisms/retnet/cuda.hpp"
#endif

namespace arch_bench {
namespace {

using testing::mechanism_cell;

using CellCase = std::tuple<Phase, DType, std::int64_t>;

class RetNetGpuCells : public ::testing::TestWithParam<CellCase> {};

TEST_P(RetNetGpuCells, RunOnceAndMatchTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [phase, dtype, length] = GetParam();
  // 2 x 4 heads: every gamma_h of a head index up to 3, and batch rows past the first.
  const Cell cell = mechanism_cell("retnet", 4, 64, length, dtype, phase, 2);
  testing::expect_cuda_cell_matches_fp64_reference(*backend, cell, phase == Phase::decode ? 8 : 8 * length);
}

INSTANTIATE_TEST_SUITE_P(Cells, RetNetGpuCells,
                         ::testing::Combine(::testing::Values(Phase::decode, Phase::prefill),
                                            ::testing::Values(DType::float32, DType::bfloat16),
                                            ::testing::Values<std::int64_t>(1, 15, 16, 17, 65, 1000)),
                         [](const ::testing::TestParamInfo<CellCase>& info) {
                           return phase_name(std::get<0>(info.param)) + "_" + dtype_name(std::get<1>(info.param)) +
                                  "_L" + std::to_string(std::get<2>(info.param));
                         });

TEST(RetNetGpu, WideAndOddHeadsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  for (const std::int64_t dim : {1, 16, 17, 48, 100, 256}) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      testing::expect_cell_matches_fp64_reference(*backend, mechanism_cell("retnet", 3, dim, 130, DType::float32, phase),
                                                  12, std::to_string(dim) + " " + phase_name(phase));
    }
  }
}

#if ARCH_BENCH_HAVE_CUDA

constexpr std::int64_t kHeads = 4;

// Tokens [first, first + rows) of every head continuing from `state`; returns out [bh, rows, dim].
template <class T>
std::vector<float> recurrence(CudaBackend& cuda, const AttentionInputs& in, std::int64_t first, std::int64_t rows,
                              Buffer<float>& state) {
  const ColumnRecurrencePlan plan =
      plan_retnet_cuda(in.batch_heads, rows, in.dim, in.dim, cuda.device().multiprocessors);
  return testing::run_column_recurrence<T>(cuda, in, first, rows, [&](testing::DeviceTokens<T>& x) {
    launch_retnet_recurrence<T>(plan, kHeads, x.q.data(), x.k.data(), x.v.data(), state.data(), x.out.data(),
                                cuda.stream());
  });
}

template <class T>
void expect_decode_equals_last_prefill_row(CudaBackend& cuda, DType dtype, std::int64_t length) {
  const AttentionInputs in = make_attention_inputs(mechanism_cell("retnet", kHeads, 64, length, dtype), length + 1, 17);
  testing::expect_decode_equals_last_prefill_row(
      cuda, in, dtype, length,
      [&](std::int64_t first, std::int64_t rows, Buffer<float>& state) { return recurrence<T>(cuda, in, first, rows, state); });
}

TEST(RetNetGpu, DecodeAtLEqualsLastRowOfPrefillOverLPlusOneTokens) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t length : {0, 1, 15, 16, 17, 100}) {
    expect_decode_equals_last_prefill_row<float>(cuda, DType::float32, length);
    expect_decode_equals_last_prefill_row<bf16>(cuda, DType::bfloat16, length);
  }
}

TEST(RetNetGpu, PrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const AttentionInputs in = make_attention_inputs(mechanism_cell("retnet", kHeads, 64, 0, DType::float32), 160, 19);
  testing::expect_prefill_continues_from_its_state(
      cuda, in,
      [&](std::int64_t first, std::int64_t rows, Buffer<float>& state) { return recurrence<float>(cuda, in, first, rows, state); });
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
