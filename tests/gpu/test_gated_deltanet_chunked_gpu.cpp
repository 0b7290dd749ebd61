// Gated DeltaNet's chunkwise tensor-core bf16 prefill (common/chunk_delta_rule.cuh) on a real
// device: the registered bf16 prefill cells against the fp64 reference at L around the 64-token
// chunk (outputs poisoned with NaN at prepare, batch 2, several heads), other head sizes and head
// counts; and the chunked kernels against the column recurrence: the same outputs and final state,
// and a prefill that continues from a carried, nonzero state. Skipped without a device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/cuda_cell_checks.hpp"
#include "mechanisms/gated_deltanet/cuda_plan.hpp"
#include "mechanisms/registry.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "gpu/chunk_prefill_checks.hpp"
#include "gpu/device_tokens.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/gated_deltanet/cuda.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#endif

namespace arch_bench {
namespace {

using testing::mechanism_cell;
#if ARCH_BENCH_HAVE_CUDA
using testing::PrefillRun;
#endif

// `cell` (a chunked one) prepared with `seed` and run once (run_cuda_cell_once).
Accuracy run_cell(Backend& backend, const Cell& cell, std::uint64_t seed) {
  EXPECT_TRUE(gated_deltanet_cuda_prefill_is_chunked(cell));
  Accuracy accuracy;
  testing::run_cuda_cell_once(backend, cell, accuracy, seed);
  return accuracy;
}

class GatedDeltaNetChunkedCells : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(GatedDeltaNetChunkedCells, Bf16PrefillMatchesTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const std::int64_t length = GetParam();
  const Cell cell = mechanism_cell("gated_deltanet", 4, 64, length, DType::bfloat16, Phase::prefill, 2);
  ASSERT_TRUE(gated_deltanet_cuda_prefill_is_chunked(cell));
  testing::expect_cuda_cell_matches_fp64_reference(*backend, cell, 8 * length, 23);
}

INSTANTIATE_TEST_SUITE_P(Lengths, GatedDeltaNetChunkedCells, testing::kChunkBoundaryLengths,
                         testing::length_test_name);

TEST(GatedDeltaNetChunkedGpu, HeadSizesAndOddHeadCountsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  for (const std::int64_t dim : {16, 48, 128}) {
    for (const std::int64_t heads : {1, 3, 9}) {
      const Accuracy accuracy =
          run_cell(*backend, mechanism_cell("gated_deltanet", heads, dim, 130, DType::bfloat16, Phase::prefill, 2), 29);
      testing::expect_within_fp64_reference(accuracy, DType::bfloat16,
                                            std::to_string(dim) + " " + std::to_string(heads));
    }
  }
}

#if ARCH_BENCH_HAVE_CUDA

constexpr std::int64_t kHeads = 4;

// Tokens [first, first + rows) of every head through the recurrence or the chunkwise kernels,
// continuing from `state` (updated in place); out and the workspace poisoned first. The chunked
// plan picks its value tile for `plan_sms` multiprocessors (the device's when < 0; 0: the widest).
PrefillRun run_prefill(CudaBackend& cuda, const AttentionInputs& in, const GatedDeltaNetGates& gates,
                       std::int64_t first, std::int64_t rows, Buffer<float>& state, bool chunked, int plan_sms = -1) {
  Allocator& a = cuda.allocator();
  testing::DeviceTokens<bf16> x(cuda, in, first, rows);  // out poisoned
  const std::vector<float> g_rows = gates.head_rows(gates.g, first, rows);
  const std::vector<float> beta_rows = gates.head_rows(gates.beta, first, rows);
  Buffer<float> g(a, g_rows.size()), beta(a, beta_rows.size());
  upload<float>(cuda, g_rows.data(), static_cast<std::int64_t>(g.size()), g.data());
  upload<float>(cuda, beta_rows.data(), static_cast<std::int64_t>(beta.size()), beta.data());
  const int sms = cuda.device().multiprocessors;
  if (chunked) {
    const ChunkDeltaRulePlan plan =
        plan_chunk_delta_rule(in.batch_heads, rows, in.dim, in.dim, plan_sms < 0 ? sms : plan_sms);
    Buffer<bf16> workspace(a, static_cast<std::size_t>(plan.workspace_bf16_elements()));
    Buffer<float> chunk_log_decay(a, static_cast<std::size_t>(plan.workspace_decay_elements));
    poison(cuda, workspace.data(), workspace.bytes());  // every element is written before it is read
    configure_gated_deltanet_chunked_prefill(plan);
    launch_gated_deltanet_chunked_prefill(plan, x.q.data(), x.k.data(), x.v.data(), g.data(), beta.data(),
                                          state.data(), x.out.data(), workspace.data(), chunk_log_decay.data(),
                                          cuda.stream());
    cuda.synchronize();
  } else {
    const ColumnRecurrencePlan plan = plan_gated_deltanet_cuda(in.batch_heads, rows, in.dim, in.dim, sms);
    launch_gated_deltanet_recurrence<bf16>(plan, x.q.data(), x.k.data(), x.v.data(), g.data(), beta.data(),
                                           state.data(), x.out.data(), cuda.stream());
    cuda.synchronize();
  }
  return {x.output(cuda), download<float>(cuda, state.data(), static_cast<std::int64_t>(state.size()))};
}

// run_prefill as the checks' `run` (chunk_prefill_checks.hpp).
auto prefill_runs(CudaBackend& cuda, const AttentionInputs& in, const GatedDeltaNetGates& gates,
                  int plan_sms = -1) {
  return [&cuda, &in, &gates, plan_sms](std::int64_t first, std::int64_t rows, Buffer<float>& state, bool chunked) {
    return run_prefill(cuda, in, gates, first, rows, state, chunked, plan_sms);
  };
}

TEST(GatedDeltaNetChunkedGpu, ChunkedPrefillEqualsTheRecurrenceOutputsAndFinalState) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t length : {1, 63, 64, 65, 300, 1000}) {
    const Cell cell = mechanism_cell("gated_deltanet", kHeads, 64, length, DType::bfloat16, Phase::prefill, 2);
    const AttentionInputs in = make_attention_inputs(cell, length, 31);
    const GatedDeltaNetGates gates = make_gated_deltanet_gates(cell, length, 31);
    testing::expect_chunked_prefill_equals_recurrence(cuda, in, length, prefill_runs(cuda, in, gates));
  }
}

// The pass double-buffers each chunk's operands (two stages, alternating): odd and even chunk
// counts, with and without a short tail, at every value tile (48: 16 columns; 64 and 128 at the
// device's choice, 32 at 4 heads, and at the widest, 64, which plan_sms = 0 gives).
TEST(GatedDeltaNetChunkedGpu, DoubleBufferedPassEqualsTheRecurrenceAtEveryValueTileAndChunkParity) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t dim : {48, 64, 128}) {
    for (const int plan_sms : {-1, 0}) {
      for (const std::int64_t length : {129, 192, 256}) {  // 3 chunks with a 1-token tail, 3 whole, 4 whole
        SCOPED_TRACE("dim " + std::to_string(dim) + " plan_sms " + std::to_string(plan_sms));
        const Cell cell = mechanism_cell("gated_deltanet", kHeads, dim, length, DType::bfloat16, Phase::prefill, 2);
        const AttentionInputs in = make_attention_inputs(cell, length, 41);
        const GatedDeltaNetGates gates = make_gated_deltanet_gates(cell, length, 41);
        testing::expect_chunked_prefill_equals_recurrence(cuda, in, length, prefill_runs(cuda, in, gates, plan_sms));
      }
    }
  }
}

TEST(GatedDeltaNetChunkedGpu, ChunkedPrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const Cell cell = mechanism_cell("gated_deltanet", kHeads, 64, 230, DType::bfloat16, Phase::prefill, 2);
  const AttentionInputs in = make_attention_inputs(cell, 230, 37);
  const GatedDeltaNetGates gates = make_gated_deltanet_gates(cell, 230, 37);
  testing::expect_chunked_prefill_continues_from_its_state(cuda, in, prefill_runs(cuda, in, gates));
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
