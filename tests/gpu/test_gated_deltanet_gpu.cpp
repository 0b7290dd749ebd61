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

#if ARCH_BENCH_HAVE_CUDA

struct GatedDeltaNetKernel {
  static constexpr const char* mechanism = "gated_deltanet";
  GatedDeltaNetKernel(const Cell& cell, std::int64_t tokens, std::uint64_t seed)
      : in(make_attention_inputs(cell, tokens, seed)), gates(make_gated_deltanet_gates(cell, tokens, seed)) {}
  // Tokens [first, first + rows) of every head, with their gates, continuing from `state`; returns
  // out [bh, rows, dim].
  template <class T>
  std::vector<float> run(CudaBackend& cuda, std::int64_t first, std::int64_t rows, Buffer<float>& state) const {
    const ColumnRecurrencePlan plan =
        plan_gated_deltanet_cuda(in.batch_heads, rows, in.dim, in.dim, cuda.device().multiprocessors);
    Buffer<float> g(cuda.allocator(), static_cast<std::size_t>(in.batch_heads * rows)),
        beta(cuda.allocator(), g.size());
    const std::vector<float> g_rows = gates.head_rows(gates.g, first, rows);
    const std::vector<float> beta_rows = gates.head_rows(gates.beta, first, rows);
    upload<float>(cuda, g_rows.data(), static_cast<std::int64_t>(g.size()), g.data());
    upload<float>(cuda, beta_rows.data(), static_cast<std::int64_t>(beta.size()), beta.data());
    return testing::run_column_recurrence<T>(cuda, in, first, rows, [&](testing::DeviceTokens<T>& x) {
      launch_gated_deltanet_recurrence<T>(plan, x.q.data(), x.k.data(), x.v.data(), g.data(), beta.data(),
                                          state.data(), x.out.data(), cuda.stream());
    });
  }
  AttentionInputs in;
  GatedDeltaNetGates gates;
};

INSTANTIATE_TYPED_TEST_SUITE_P(GatedDeltaNet, ColumnRecurrenceKernelGpu, GatedDeltaNetKernel);

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
