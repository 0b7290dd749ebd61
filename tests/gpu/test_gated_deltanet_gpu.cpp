// gated_deltanet's CUDA kernel on a real device against itself: a decode at position L equals the last row
// of a prefill over L + 1 tokens with the same final state, and a prefill continues from the state
// it is given. Its registered cells against the fp64 reference are in
// test_column_recurrence_cells_gpu.cpp, with the other column recurrence. Skipped without a device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "gpu/column_recurrence_gpu_checks.hpp"
#include "mechanisms/gated_deltanet/cuda.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#endif

namespace arch_bench {
namespace {

using testing::mechanism_cell;

#if ARCH_BENCH_HAVE_CUDA

constexpr std::int64_t kHeads = 4;

// Tokens [first, first + rows) of every head, with their gates, continuing from `state`; returns
// out [bh, rows, dim].
template <class T>
std::vector<float> recurrence(CudaBackend& cuda, const AttentionInputs& in, const GatedDeltaNetGates& gates,
                              std::int64_t first, std::int64_t rows, Buffer<float>& state) {
  const ColumnRecurrencePlan plan =
      plan_gated_deltanet_cuda(in.batch_heads, rows, in.dim, in.dim, cuda.device().multiprocessors);
  Buffer<float> g(cuda.allocator(), static_cast<std::size_t>(in.batch_heads * rows)), beta(cuda.allocator(), g.size());
  std::vector<float> g_rows, beta_rows;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    g_rows.insert(g_rows.end(), gates.g_at(bh, first), gates.g_at(bh, first + rows));
    beta_rows.insert(beta_rows.end(), gates.beta_at(bh, first), gates.beta_at(bh, first + rows));
  }
  upload<float>(cuda, g_rows.data(), static_cast<std::int64_t>(g.size()), g.data());
  upload<float>(cuda, beta_rows.data(), static_cast<std::int64_t>(beta.size()), beta.data());
  return testing::run_column_recurrence<T>(cuda, in, first, rows, [&](testing::DeviceTokens<T>& x) {
    launch_gated_deltanet_recurrence<T>(plan, x.q.data(), x.k.data(), x.v.data(), g.data(), beta.data(), state.data(),
                                        x.out.data(), cuda.stream());
  });
}

template <class T>
void expect_decode_equals_last_prefill_row(CudaBackend& cuda, DType dtype, std::int64_t length) {
  const Cell cell = mechanism_cell("gated_deltanet", kHeads, 64, length, dtype);
  const AttentionInputs in = make_attention_inputs(cell, length + 1, 17);
  const GatedDeltaNetGates gates = make_gated_deltanet_gates(cell, length + 1, 17);
  testing::expect_decode_equals_last_prefill_row(
      cuda, in, dtype, length, [&](std::int64_t first, std::int64_t rows, Buffer<float>& state) {
        return recurrence<T>(cuda, in, gates, first, rows, state);
      });
}

TEST(GatedDeltaNetGpu, DecodeAtLEqualsLastRowOfPrefillOverLPlusOneTokens) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t length : {0, 1, 15, 16, 17, 100}) {
    expect_decode_equals_last_prefill_row<float>(cuda, DType::float32, length);
    expect_decode_equals_last_prefill_row<bf16>(cuda, DType::bfloat16, length);
  }
}

TEST(GatedDeltaNetGpu, PrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const Cell cell = mechanism_cell("gated_deltanet", kHeads, 64, 0, DType::float32);
  const AttentionInputs in = make_attention_inputs(cell, 160, 19);
  const GatedDeltaNetGates gates = make_gated_deltanet_gates(cell, 160, 19);
  testing::expect_prefill_continues_from_its_state(
      cuda, in, [&](std::int64_t first, std::int64_t rows, Buffer<float>& state) {
        return recurrence<float>(cuda, in, gates, first, rows, state);
      });
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
