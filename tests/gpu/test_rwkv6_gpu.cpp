// rwkv6 CUDA kernels on a real device (tests/gpu/rwkv_gpu_checks.hpp says what is checked). Skipped
// without a device.
#include <tuple>

#include "gpu/rwkv_gpu_checks.hpp"

namespace arch_bench {
namespace {

using CellCase = std::tuple<Phase, DType, std::int64_t>;

class Rwkv6GpuCells : public ::testing::TestWithParam<CellCase> {};

TEST_P(Rwkv6GpuCells, RunOnceAndMatchTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [phase, dtype, length] = GetParam();
  testing::expect_rwkv_cell_matches_reference("rwkv6", *backend, phase, dtype, 64, length);
}

INSTANTIATE_TEST_SUITE_P(Cells, Rwkv6GpuCells,
                         ::testing::Combine(::testing::Values(Phase::decode, Phase::prefill),
                                            ::testing::Values(DType::float32, DType::bfloat16),
                                            ::testing::Values<std::int64_t>(1, 15, 16, 17, 1000)),
                         [](const ::testing::TestParamInfo<CellCase>& info) {
                           return phase_name(std::get<0>(info.param)) + "_" + dtype_name(std::get<1>(info.param)) +
                                  "_L" + std::to_string(std::get<2>(info.param));
                         });

TEST(Rwkv6Gpu, WideAndOddHeadsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  for (const std::int64_t dim : {16, 48, 100, 256}) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      testing::expect_rwkv_cell_matches_reference("rwkv6", *backend, phase, DType::float32, dim, 130);
    }
  }
}

#if ARCH_BENCH_HAVE_CUDA
TEST(Rwkv6Gpu, DecodeAtLEqualsRowLOfPrefillOverLPlusOneTokens) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t length : {0, 1, 15, 16, 17, 1000}) {
    testing::expect_rwkv_decode_equals_last_prefill_row<float>(cuda, RwkvVersion::v6, DType::float32, length);
    testing::expect_rwkv_decode_equals_last_prefill_row<bf16>(cuda, RwkvVersion::v6, DType::bfloat16, length);
  }
}

TEST(Rwkv6Gpu, PrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  testing::expect_rwkv_prefill_continues(cuda_backend_of(*backend), RwkvVersion::v6);
}
#endif

}  // namespace
}  // namespace arch_bench
