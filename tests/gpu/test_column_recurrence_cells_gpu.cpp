// The column recurrence mechanisms' registered CUDA cells on a real device (retnet and gated_deltanet,
// whose kernels share mechanisms/common/column_recurrence.cuh): against the fp64 reference in decode
// and prefill, bf16 and fp32, L around the 16-token stage, and at odd and wide heads. One
// parameterised suite over both; each mechanism's own file tests its kernel against itself.
// Skipped without a device.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "gpu/cuda_cell_checks.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

using testing::mechanism_cell;

const auto kMechanisms = ::testing::Values(std::string("retnet"), std::string("gated_deltanet"));

using CellCase = std::tuple<std::string, Phase, DType, std::int64_t>;

class ColumnRecurrenceGpuCells : public ::testing::TestWithParam<CellCase> {};

TEST_P(ColumnRecurrenceGpuCells, RunOnceAndMatchTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [mechanism, phase, dtype, length] = GetParam();
  // 2 x 4 heads: batch rows past the first (and for retnet every gamma_h of a head index up to 3).
  const Cell cell = mechanism_cell(mechanism, 4, 64, length, dtype, phase, 2);
  testing::expect_cuda_cell_matches_fp64_reference(*backend, cell, phase == Phase::decode ? 8 : 8 * length);
}

INSTANTIATE_TEST_SUITE_P(Cells, ColumnRecurrenceGpuCells,
                         ::testing::Combine(kMechanisms, ::testing::Values(Phase::decode, Phase::prefill),
                                            ::testing::Values(DType::float32, DType::bfloat16),
                                            ::testing::Values<std::int64_t>(1, 15, 16, 17, 65, 1000)),
                         [](const ::testing::TestParamInfo<CellCase>& info) {
                           return std::get<0>(info.param) + "_" + phase_name(std::get<1>(info.param)) + "_" +
                                  dtype_name(std::get<2>(info.param)) + "_L" + std::to_string(std::get<3>(info.param));
                         });

class ColumnRecurrenceGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(ColumnRecurrenceGpu, WideAndOddHeadsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  for (const std::int64_t dim : {1, 16, 17, 48, 100, 256}) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      testing::expect_cell_matches_fp64_reference(*backend, mechanism_cell(GetParam(), 3, dim, 130, DType::float32, phase),
                                                  12, std::to_string(dim) + " " + phase_name(phase));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, ColumnRecurrenceGpu, kMechanisms,
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace arch_bench
