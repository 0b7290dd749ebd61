// RWKV-7's chunkwise tensor-core prefill (rwkv7/chunk_cuda.cu) on a real device, launched directly:
// against the fp64 recurrent reference (outputs and final state) over head sizes 16..128 and lengths
// around the 32-token chunk, with strong and weak decays, continuing from a carried state; against
// the CPU replay of its own arithmetic (rwkv7/chunk_replay.hpp), which it must match to within a
// bf16 rounding step or two; and against rwkv7's CUDA recurrence (rwkv7/cuda.cu), the path fp32 and
// decode keep. The cells that route through it (bf16 prefill) are checked by test_rwkv_gpu.cpp.
// Skipped without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "gpu/rwkv_gpu_checks.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_plan.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_replay.hpp"
#include "mechanisms/rwkv/rwkv7/reference.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_cuda.hpp"
#endif

namespace arch_bench {
namespace {

#if ARCH_BENCH_HAVE_CUDA

RwkvInputs chunk_inputs(std::int64_t heads, std::int64_t dim, std::int64_t tokens, std::uint64_t seed = 23) {
  return make_rwkv_inputs(testing::mechanism_cell("rwkv7", heads, dim, tokens, DType::bfloat16), tokens, seed,
                          RwkvVersion::v7);
}

enum class Path { chunked, recurrent };

// The prefill over tokens [first, first + count) of every head on `path`, continuing from `state`
// (fp32 H [bh][key][value], in and out); returns out [bh][count][dim]. The chunked plan picks its
// value tile for `plan_sms` multiprocessors (the device's when < 0; 0: the widest).
std::vector<float> prefill(CudaBackend& cuda, const RwkvInputs& in, std::int64_t first, std::int64_t count,
                           std::vector<float>& state, Path path = Path::chunked, int plan_sms = -1) {
  const std::int64_t elements = in.batch_heads * count * in.dim;
  std::vector<Buffer<bf16>> buffers;
  for (const RwkvInput input : {kRwkvR, kRwkvK, kRwkvV, kRwkvDecay, kRwkvKappa, kRwkvIclr}) {
    buffers.push_back(testing::upload_rwkv_rows<bf16>(cuda, in, input, first, count));
  }
  Buffer<float> s(cuda.allocator(), state.size());
  upload<float>(cuda, state.data(), static_cast<std::int64_t>(state.size()), s.data());
  Buffer<bf16> out(cuda.allocator(), static_cast<std::size_t>(elements));
  poison(cuda, out.data(), out.bytes());
  const RwkvTokens<bf16> x{buffers[0].data(), buffers[1].data(), buffers[2].data(),
                           buffers[3].data(), buffers[4].data(), buffers[5].data()};
  if (path == Path::chunked) {
    const Rwkv7ChunkPlan plan =
        plan_rwkv7_chunk(in.batch_heads, count, in.dim, plan_sms < 0 ? cuda.device().multiprocessors : plan_sms);
    configure_rwkv7_chunked(plan);
    Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>(plan.workspace_floats()));
    poison(cuda, workspace.data(), workspace.bytes());  // every element read is written first
    launch_rwkv7_chunked(plan, x, s.data(), workspace.data(), out.data(), cuda.stream());
    cuda.synchronize();
  } else {
    const RwkvScanPlan plan = plan_rwkv_scan(RwkvVersion::v7, in.batch_heads, in.heads, count, in.dim);
    launch_rwkv_scan<bf16>(plan, RwkvParameters{}, x, s.data(), out.data(), cuda.stream());
    cuda.synchronize();
  }
  state = download<float>(cuda, s.data(), static_cast<std::int64_t>(state.size()));
  return download<bf16>(cuda, out.data(), elements);
}

struct Errors {
  double output = 0, state = 0, replay = 0, recurrence = 0;
};

// The chunked prefill over every token, cut into pieces at `cuts` (each continuing from the last's
// state), against the fp64 reference (outputs and final state, max |x - ref| / max |ref|), against
// the CPU replay cut the same way and against the CUDA recurrence over the whole sequence (outputs,
// relative to the same max |ref|).
Errors against_reference(CudaBackend& cuda, const RwkvInputs& in, std::vector<std::int64_t> cuts = {},
                         int plan_sms = -1) {
  cuts.push_back(in.tokens);
  const std::int64_t dim = in.dim;
  std::vector<float> state(static_cast<std::size_t>(in.batch_heads * dim * dim), 0.0f);
  std::vector<std::vector<float>> pieces;
  std::int64_t first = 0;
  for (const std::int64_t cut : cuts) {
    pieces.push_back(prefill(cuda, in, first, cut - first, state, Path::chunked, plan_sms));
    first = cut;
  }
  std::vector<float> recurrent_state(state.size(), 0.0f);
  const std::vector<float> recurrent = prefill(cuda, in, 0, in.tokens, recurrent_state, Path::recurrent);
  double out_diff = 0, out_scale = 0, state_diff = 0, state_scale = 0, replay_diff = 0, recurrence_diff = 0;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    const std::int64_t n = in.tokens;
    const RwkvMatrixResult ref =
        rwkv7_reference(in.head_matrix(kRwkvR, bh, n), in.head_matrix(kRwkvDecay, bh, n), in.head_matrix(kRwkvK, bh, n),
                        in.head_matrix(kRwkvV, bh, n), in.head_matrix(kRwkvKappa, bh, n),
                        in.head_matrix(kRwkvIclr, bh, n));
    std::vector<float> replay_state(static_cast<std::size_t>(dim * dim), 0.0f);
    std::int64_t begin = 0;
    for (std::size_t p = 0; p < cuts.size(); ++p) {
      const std::int64_t count = cuts[p] - begin;
      std::vector<float> replay(static_cast<std::size_t>(count * dim));
      auto at = [&](RwkvInput input) { return in.at(input, bh, begin); };
      rwkv7_chunk_replay(static_cast<int>(dim), count, at(kRwkvR), at(kRwkvDecay), at(kRwkvK), at(kRwkvV),
                         at(kRwkvKappa), at(kRwkvIclr), replay_state.data(), replay.data());
      for (std::int64_t i = 0; i < count * dim; ++i) {
        const float gpu = pieces[p][static_cast<std::size_t>(bh * count * dim + i)];
        const double expected = ref.outputs.data[static_cast<std::size_t>(begin * dim + i)];
        EXPECT_TRUE(std::isfinite(gpu));  // the output was poisoned with NaN before the run
        out_diff = std::fmax(out_diff, std::fabs(gpu - expected));
        out_scale = std::fmax(out_scale, std::fabs(expected));
        replay_diff = std::fmax(replay_diff, std::fabs(gpu - replay[static_cast<std::size_t>(i)]));
        recurrence_diff = std::fmax(
            recurrence_diff, std::fabs(gpu - recurrent[static_cast<std::size_t>((bh * n + begin) * dim + i)]));
      }
      begin = cuts[p];
    }
    for (std::int64_t j = 0; j < dim; ++j) {  // H [key j][value i] against S [value i][key j]
      for (std::int64_t i = 0; i < dim; ++i) {
        const double expected = ref.state.data[static_cast<std::size_t>(i * dim + j)];
        state_diff =
            std::fmax(state_diff, std::fabs(state[static_cast<std::size_t>((bh * dim + j) * dim + i)] - expected));
        state_scale = std::fmax(state_scale, std::fabs(expected));
      }
    }
  }
  return {out_diff / out_scale, state_diff / state_scale, replay_diff / out_scale, recurrence_diff / out_scale};
}

const double kTolerance = dtype_tolerance(DType::bfloat16);
// The kernels and the replay round at the same places; what is left is the order of fp32 sums and
// expf's last bits, which can move a bf16 rounding by one step (2^-8 relative) here and there.
constexpr double kReplayTolerance = 4e-3;

void expect_within(const Errors& e, const std::string& where) {
  EXPECT_LT(e.output, kTolerance) << where;
  EXPECT_LT(e.state, kTolerance) << where;
  EXPECT_LT(e.replay, kReplayTolerance) << where;
  // Both within bf16's tolerance of the reference, so within twice it of each other.
  EXPECT_LT(e.recurrence, 2 * kTolerance) << where;
}

TEST(Rwkv7ChunkGpu, MatchesTheFp64ReferenceTheReplayAndTheRecurrence) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t dim : {16, 32, 64, 128}) {
    for (const std::int64_t tokens : {1, 31, 32, 33, 600}) {
      const RwkvInputs in = chunk_inputs(3, dim, tokens);
      expect_within(against_reference(cuda, in), "d " + std::to_string(dim) + " L " + std::to_string(tokens));
    }
  }
}

// The pass double-buffers each chunk's operands (two stages, alternating): odd and even chunk
// counts, with and without a short tail, at every value tile (3 heads of d64: 16 columns for the
// device, 32 planned for one SM, 64 for none; d48: 16; d128: 64 for none).
TEST(Rwkv7ChunkGpu, DoubleBufferedPassAtEveryValueTileAndChunkParity) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t dim : {48, 64, 128}) {
    for (const int plan_sms : {-1, 1, 0}) {
      for (const std::int64_t tokens : {65, 96, 128}) {  // 3 chunks with a 1-token tail, 3 whole, 4 whole
        const RwkvInputs in = chunk_inputs(3, dim, tokens, 43);
        expect_within(against_reference(cuda, in, {}, plan_sms), "d " + std::to_string(dim) + " plan_sms " +
                                                                      std::to_string(plan_sms) + " L " +
                                                                      std::to_string(tokens));
      }
    }
  }
}

TEST(Rwkv7ChunkGpu, ContinuesFromACarriedState) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const RwkvInputs in = chunk_inputs(2, 64, 400);
  expect_within(against_reference(cuda_backend_of(*backend), in, {7, 32, 70, 71, 250}), "cut at 7, 32, 70, 71, 250");
}

TEST(Rwkv7ChunkGpu, StrongAndWeakDecays) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  RwkvInputs in = chunk_inputs(2, 64, 333);
  testing::for_each_decay_regime(in, {6.0f, 12.0f}, {-12.0f, 12.0f},
                                 [&](const RwkvInputs& regime, const char* name) {
                                   expect_within(against_reference(cuda, regime), name);
                                 });
}

#else

TEST(Rwkv7ChunkGpu, NeedsACudaBuild) { GTEST_SKIP() << "built without CUDA"; }

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
