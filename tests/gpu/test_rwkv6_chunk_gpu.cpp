// RWKV-6's chunkwise tensor-core prefill (rwkv6/chunk_cuda.cu) on a real device, launched directly:
// against the fp64 recurrent reference (outputs and final state) over head sizes 16..128 and lengths
// around the 16-token sub-chunk and the 64-token chunk, with strong and weak decays, continuing from
// a carried state, and against the CPU replay of its own arithmetic (rwkv6/chunk_replay.hpp), which
// it must match to within one bf16 step of the output. The cells that route through it (bf16 prefill) are checked by
// test_rwkv_gpu.cpp. Skipped without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <utility>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "gpu/rwkv_gpu_checks.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_plan.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_replay.hpp"
#include "mechanisms/rwkv/rwkv6/reference.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "mechanisms/rwkv/cuda.hpp"
#endif

namespace arch_bench {
namespace {

#if ARCH_BENCH_HAVE_CUDA

RwkvInputs chunk_inputs(std::int64_t heads, std::int64_t dim, std::int64_t tokens, std::uint64_t seed = 23) {
  return make_rwkv_inputs(testing::mechanism_cell("rwkv6", heads, dim, tokens, DType::bfloat16), tokens, seed,
                          RwkvVersion::v6);
}

// The chunked prefill over tokens [first, first + count) of every head, continuing from `state`
// (fp32 [bh][dim][dim], in and out); returns out [bh][count][dim].
std::vector<float> chunked_prefill(CudaBackend& cuda, const RwkvInputs& in, std::int64_t first, std::int64_t count,
                                   std::vector<float>& state) {
  const std::int64_t elements = in.batch_heads * count * in.dim;
  std::vector<Buffer<bf16>> buffers;
  for (const RwkvInput input : {kRwkvR, kRwkvK, kRwkvV, kRwkvDecay}) {
    buffers.push_back(testing::upload_rwkv_rows<bf16>(cuda, in, input, first, count));
  }
  Buffer<float> u(cuda.allocator(), in.u.size()), s(cuda.allocator(), state.size());
  upload<float>(cuda, in.u.data(), static_cast<std::int64_t>(in.u.size()), u.data());
  upload<float>(cuda, state.data(), static_cast<std::int64_t>(state.size()), s.data());
  const Rwkv6ChunkPlan plan = plan_rwkv6_chunk(in.batch_heads, in.heads, count, in.dim);
  configure_rwkv6_chunked(plan);  // its shared memory is past 48 KiB
  Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>(plan.workspace_floats()));
  poison(cuda, workspace.data(), workspace.bytes());  // every element read is written first
  Buffer<bf16> out(cuda.allocator(), static_cast<std::size_t>(elements));
  poison(cuda, out.data(), out.bytes());
  const RwkvTokens<bf16> x{buffers[0].data(), buffers[1].data(), buffers[2].data(), buffers[3].data()};
  launch_rwkv6_chunked(plan, RwkvParameters{nullptr, u.data()}, x, s.data(), workspace.data(), out.data(),
                       cuda.stream());
  cuda.synchronize();
  state = download<float>(cuda, s.data(), static_cast<std::int64_t>(state.size()));
  return download<bf16>(cuda, out.data(), elements);
}

struct Errors {
  double output = 0, state = 0, replay = 0;
};

// The prefill over every token, cut into pieces at `cuts` (each continuing from the last's state),
// against the fp64 reference (outputs and final state, max |x - ref| / max |ref|) and against the
// CPU replay cut the same way (outputs, relative to the same max |ref|).
Errors against_reference(CudaBackend& cuda, const RwkvInputs& in, std::vector<std::int64_t> cuts = {}) {
  cuts.push_back(in.tokens);
  std::vector<float> state(static_cast<std::size_t>(in.batch_heads * in.dim * in.dim), 0.0f), out;
  std::vector<std::vector<float>> pieces;
  std::int64_t first = 0;
  for (const std::int64_t cut : cuts) {
    pieces.push_back(chunked_prefill(cuda, in, first, cut - first, state));
    first = cut;
  }
  double out_diff = 0, out_scale = 0, state_diff = 0, state_scale = 0, replay_diff = 0;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    const RwkvMatrixResult ref =
        rwkv6_reference(in.head_matrix(kRwkvR, bh, in.tokens), in.head_matrix(kRwkvK, bh, in.tokens),
                        in.head_matrix(kRwkvV, bh, in.tokens), in.head_matrix(kRwkvDecay, bh, in.tokens),
                        in.parameter(in.u, bh));
    std::vector<float> replay_state(static_cast<std::size_t>(in.dim * in.dim), 0.0f);
    std::int64_t begin = 0;
    for (std::size_t p = 0; p < cuts.size(); ++p) {
      const std::int64_t count = cuts[p] - begin;
      std::vector<float> replay(static_cast<std::size_t>(count * in.dim));
      auto at = [&](RwkvInput input) { return in.at(input, bh, begin); };
      rwkv6_chunk_replay(static_cast<int>(in.dim), count, at(kRwkvR), at(kRwkvK), at(kRwkvV), at(kRwkvDecay),
                         in.u.data() + (bh % in.heads) * in.dim, replay_state.data(), replay.data());
      for (std::int64_t i = 0; i < count * in.dim; ++i) {
        const float gpu = pieces[p][static_cast<std::size_t>(bh * count * in.dim + i)];
        const double expected = ref.outputs.data[static_cast<std::size_t>(begin * in.dim + i)];
        EXPECT_TRUE(std::isfinite(gpu));  // the output was poisoned with NaN before the run
        out_diff = std::fmax(out_diff, std::fabs(gpu - expected));
        out_scale = std::fmax(out_scale, std::fabs(expected));
        replay_diff = std::fmax(replay_diff, std::fabs(gpu - replay[static_cast<std::size_t>(i)]));
      }
      begin = cuts[p];
    }
    for (std::int64_t i = 0; i < in.dim * in.dim; ++i) {
      state_diff = std::fmax(state_diff, std::fabs(state[static_cast<std::size_t>(bh * in.dim * in.dim + i)] -
                                                    ref.state.data[static_cast<std::size_t>(i)]));
      state_scale = std::fmax(state_scale, std::fabs(ref.state.data[static_cast<std::size_t>(i)]));
    }
  }
  return {out_diff / out_scale, state_diff / state_scale, replay_diff / out_scale};
}

const double kTolerance = dtype_tolerance(DType::bfloat16);
// The kernels and the replay round at the same places; what is left is the order of fp32 sums (the
// tensor cores' inside the off-diagonal scores, P V and R^ S) and expf's last bits, which can move a
// bf16 rounding by one step here and there: one step of an output just past a power of two is up to
// 2^-7 of max |ref|, so the bound is that step, still under the bf16 tolerance (1e-2).
constexpr double kReplayTolerance = 0.0078125;

void expect_within(const Errors& e, const std::string& where) {
  EXPECT_LT(e.output, kTolerance) << where;
  EXPECT_LT(e.state, kTolerance) << where;
  EXPECT_LT(e.replay, kReplayTolerance) << where;
}

TEST(Rwkv6ChunkGpu, MatchesTheFp64ReferenceAndTheReplay) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t dim : {16, 32, 64, 128}) {
    for (const std::int64_t tokens : {1, 15, 16, 17, 63, 64, 65, 1000}) {
      const RwkvInputs in = chunk_inputs(3, dim, tokens);
      expect_within(against_reference(cuda, in), "d " + std::to_string(dim) + " L " + std::to_string(tokens));
    }
  }
}

TEST(Rwkv6ChunkGpu, ContinuesFromACarriedState) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const RwkvInputs in = chunk_inputs(2, 64, 300);
  expect_within(against_reference(cuda_backend_of(*backend), in, {7, 16, 64, 70, 71, 135, 200}),
                "cut at 7, 16, 64, 70, 71, 135, 200");
}

TEST(Rwkv6ChunkGpu, StrongAndWeakDecays) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  RwkvInputs in = chunk_inputs(2, 64, 333);
  testing::for_each_decay_regime(in, {2.0f, 6.0f}, {-12.0f, 6.0f},
                                 [&](const RwkvInputs& regime, const char* name) {
                                   expect_within(against_reference(cuda, regime), name);
                                 });
}

TEST(Rwkv6ChunkGpu, SharedMemoryLetsTheOutputKernelShareAnSm) {
  // Issue 41's residency targets on sm_90 (228 KiB of shared memory per SM): three output blocks per
  // SM at d 64, two at d 128, as the plan's byte counts promise (tests/test_rwkv6_chunk.cpp); the
  // runtime's occupancy calculator also counts registers and its own reservation.
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const CudaDeviceInfo& device = cuda_backend_of(*backend).device();
  if (device.major != 9) GTEST_SKIP() << "the targets are sm_90's";
  for (const auto& [dim, output_blocks] : {std::pair{64, 3}, std::pair{128, 2}}) {
    const Rwkv6ChunkPlan plan = plan_rwkv6_chunk(16 * 8, 8, 8192, dim);
    configure_rwkv6_chunked(plan);
    const Rwkv6ChunkResidency residency = rwkv6_chunk_residency(plan);
    EXPECT_GE(residency.output_blocks, output_blocks) << "d " << dim;
    EXPECT_GE(residency.state_blocks, 3) << "d " << dim;
    std::printf("d %d: %d chunk-state and %d output blocks per SM\n", dim, residency.state_blocks,
                residency.output_blocks);
  }
}

#else

TEST(Rwkv6ChunkGpu, NeedsACudaBuild) { GTEST_SKIP() << "built without CUDA"; }

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
