// retnet's CUDA kernel on a real device against itself: a decode at position L equals the last row
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
#include "mechanisms/retnet/cuda.hpp"
#endif

namespace arch_bench {
namespace {

#if ARCH_BENCH_HAVE_CUDA

struct RetNetKernel {
  static constexpr const char* mechanism = "retnet";
  RetNetKernel(const Cell& cell, std::int64_t tokens, std::uint64_t seed)
      : heads(cell.heads), in(make_attention_inputs(cell, tokens, seed)) {}
  // Tokens [first, first + rows) of every head continuing from `state`; returns out [bh, rows, dim].
  template <class T>
  std::vector<float> run(CudaBackend& cuda, std::int64_t first, std::int64_t rows, Buffer<float>& state) const {
    const ColumnRecurrencePlan plan =
        plan_retnet_cuda(in.batch_heads, rows, in.dim, in.dim, cuda.device().multiprocessors);
    return testing::run_column_recurrence<T>(cuda, in, first, rows, [&](testing::DeviceTokens<T>& x) {
      launch_retnet_recurrence<T>(plan, heads, x.q.data(), x.k.data(), x.v.data(), state.data(), x.out.data(),
                                  cuda.stream());
    });
  }
  std::int64_t heads;  // gamma_h follows the head index within a batch row
  AttentionInputs in;
};

INSTANTIATE_TYPED_TEST_SUITE_P(RetNet, ColumnRecurrenceKernelGpu, RetNetKernel);

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
