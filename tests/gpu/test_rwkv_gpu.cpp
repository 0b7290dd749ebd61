// The three RWKV generations' CUDA kernels on a real device (tests/gpu/rwkv_gpu_checks.hpp says what
// is checked): one parameterised suite over rwkv4, rwkv6 and rwkv7, so that a check is written once
// and every generation runs it. Skipped without a device.
#include <string>
#include <tuple>

#include "gpu/rwkv_gpu_checks.hpp"
#include "mechanisms/rwkv/inputs.hpp"

namespace arch_bench {
namespace {

struct RwkvGeneration {
  const char* id;
  RwkvVersion version;
};

std::ostream& operator<<(std::ostream& out, const RwkvGeneration& generation) { return out << generation.id; }

const auto kGenerations = ::testing::Values(RwkvGeneration{"rwkv4", RwkvVersion::v4},
                                            RwkvGeneration{"rwkv6", RwkvVersion::v6},
                                            RwkvGeneration{"rwkv7", RwkvVersion::v7});

using CellCase = std::tuple<RwkvGeneration, Phase, DType, std::int64_t>;

class RwkvGpuCells : public ::testing::TestWithParam<CellCase> {};

TEST_P(RwkvGpuCells, RunOnceAndMatchTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [generation, phase, dtype, length] = GetParam();
  testing::expect_rwkv_cell_matches_reference(generation.id, *backend, phase, dtype, 64, length);
}

INSTANTIATE_TEST_SUITE_P(Cells, RwkvGpuCells,
                         ::testing::Combine(kGenerations, ::testing::Values(Phase::decode, Phase::prefill),
                                            ::testing::Values(DType::float32, DType::bfloat16),
                                            ::testing::Values<std::int64_t>(1, 15, 16, 17, 1000)),
                         [](const ::testing::TestParamInfo<CellCase>& info) {
                           return std::string(std::get<0>(info.param).id) + "_" + phase_name(std::get<1>(info.param)) +
                                  "_" + dtype_name(std::get<2>(info.param)) + "_L" +
                                  std::to_string(std::get<3>(info.param));
                         });

class RwkvGpu : public ::testing::TestWithParam<RwkvGeneration> {};

TEST_P(RwkvGpu, WideAndOddHeadsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  for (const std::int64_t dim : {16, 48, 100, 256}) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      testing::expect_rwkv_cell_matches_reference(GetParam().id, *backend, phase, DType::float32, dim, 130);
    }
  }
}

#if ARCH_BENCH_HAVE_CUDA
TEST_P(RwkvGpu, DecodeAtLEqualsRowLOfPrefillOverLPlusOneTokens) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const RwkvVersion version = GetParam().version;
  for (const std::int64_t length : {0, 1, 15, 16, 17, 1000}) {
    testing::expect_rwkv_decode_equals_last_prefill_row<float>(cuda, version, DType::float32, length);
    testing::expect_rwkv_decode_equals_last_prefill_row<bf16>(cuda, version, DType::bfloat16, length);
  }
}

TEST_P(RwkvGpu, OneWarpBlocksOfASmallGridComputeTheSameBits) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t dim : {16, 64, 100, 128}) {
    testing::expect_rwkv_block_sizes_agree<float>(cuda, GetParam().version, DType::float32, dim);
    testing::expect_rwkv_block_sizes_agree<bf16>(cuda, GetParam().version, DType::bfloat16, dim);
  }
}

TEST_P(RwkvGpu, PrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  testing::expect_rwkv_prefill_continues(cuda_backend_of(*backend), GetParam().version);
}
#endif

INSTANTIATE_TEST_SUITE_P(Generations, RwkvGpu, kGenerations,
                         [](const ::testing::TestParamInfo<RwkvGeneration>& info) { return std::string(info.param.id); });

}  // namespace
}  // namespace arch_bench
