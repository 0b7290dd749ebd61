// gated_deltanet CUDA kernels on a real device: the registered mechanism's CUDA cells against the fp64
// reference (decode and prefill, bf16 and fp32, L around the 16-token stage), odd and wide heads,
// and the kernel against itself: a decode at position L equals the last row of a prefill over
// L + 1 tokens with the same final state, and a prefill continues from the state it is given.
// Skipped without a device.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "mechanisms/registry.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/gated_deltanet/cuda.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#endif

namespace arch_bench {
namespace {

using testing::mechanism_cell;

using CellCase = std::tuple<Phase, DType, std::int64_t>;

class GatedDeltaNetGpuCells : public ::testing::TestWithParam<CellCase> {};

TEST_P(GatedDeltaNetGpuCells, RunOnceAndMatchTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [phase, dtype, length] = GetParam();
  const Mechanism* gdn = find_mechanism("gated_deltanet");
  ASSERT_NE(gdn, nullptr);
  // 2 x 4 heads: batch rows past the first.
  const Cell cell = mechanism_cell("gated_deltanet", 4, 64, length, dtype, phase, 2);
  ASSERT_FALSE(gdn->unsupported_on(cell, "cuda"));
  auto prepared = gdn->prepare(cell, 11, *backend);
  const std::int64_t allocations = backend->allocator().allocation_count();
  prepared->run();
  EXPECT_EQ(backend->allocator().allocation_count(), allocations);  // run() allocates nothing
  backend->synchronize();
  const Accuracy accuracy = prepared->check();
  EXPECT_TRUE(accuracy.output_finite);  // the output was poisoned with NaN before the run
  EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(dtype));
  EXPECT_EQ(accuracy.rows_checked, phase == Phase::decode ? 8 : 8 * length);
}

INSTANTIATE_TEST_SUITE_P(Cells, GatedDeltaNetGpuCells,
                         ::testing::Combine(::testing::Values(Phase::decode, Phase::prefill),
                                            ::testing::Values(DType::float32, DType::bfloat16),
                                            ::testing::Values<std::int64_t>(1, 15, 16, 17, 65, 1000)),
                         [](const ::testing::TestParamInfo<CellCase>& info) {
                           return phase_name(std::get<0>(info.param)) + "_" + dtype_name(std::get<1>(info.param)) +
                                  "_L" + std::to_string(std::get<2>(info.param));
                         });

TEST(GatedDeltaNetGpu, WideAndOddHeadsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const Mechanism* gdn = find_mechanism("gated_deltanet");
  for (const std::int64_t dim : {1, 16, 17, 48, 100, 256}) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      const Cell cell = mechanism_cell("gated_deltanet", 3, dim, 130, DType::float32, phase);
      auto prepared = gdn->prepare(cell, 12, *backend);
      prepared->run();
      const Accuracy accuracy = prepared->check();
      EXPECT_TRUE(accuracy.output_finite) << dim << " " << phase_name(phase);
      EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(DType::float32)) << dim << " " << phase_name(phase);
    }
  }
}

#if ARCH_BENCH_HAVE_CUDA

constexpr std::int64_t kHeads = 4;

// Tokens [first, first + rows) of every head, in the kernel's layout [bh, rows, dim], with their
// gates, continuing from `state`; returns out [bh, rows, dim].
template <class T>
std::vector<float> recurrence(CudaBackend& cuda, const AttentionInputs& in, const GatedDeltaNetGates& gates,
                              std::int64_t first, std::int64_t rows, Buffer<float>& state) {
  const ColumnRecurrencePlan plan =
      plan_gated_deltanet_cuda(in.batch_heads, rows, in.dim, in.dim, cuda.device().multiprocessors);
  const std::int64_t count = in.batch_heads * rows * in.dim;
  Buffer<T> q(cuda.allocator(), static_cast<std::size_t>(count)), k(cuda.allocator(), q.size()),
      v(cuda.allocator(), q.size()), out(cuda.allocator(), q.size());
  Buffer<float> g(cuda.allocator(), static_cast<std::size_t>(in.batch_heads * rows)), beta(cuda.allocator(), g.size());
  std::vector<float> g_rows, beta_rows;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    g_rows.insert(g_rows.end(), gates.g_at(bh, first), gates.g_at(bh, first + rows));
    beta_rows.insert(beta_rows.end(), gates.beta_at(bh, first), gates.beta_at(bh, first + rows));
  }
  upload<T>(cuda, in.head_rows(in.q, first, rows).data(), count, q.data());
  upload<T>(cuda, in.head_rows(in.k, first, rows).data(), count, k.data());
  upload<T>(cuda, in.head_rows(in.v, first, rows).data(), count, v.data());
  upload<float>(cuda, g_rows.data(), static_cast<std::int64_t>(g.size()), g.data());
  upload<float>(cuda, beta_rows.data(), static_cast<std::int64_t>(beta.size()), beta.data());
  poison(cuda, out.data(), out.bytes());
  launch_gated_deltanet_recurrence<T>(plan, q.data(), k.data(), v.data(), g.data(), beta.data(), state.data(),
                                      out.data(), cuda.stream());
  cuda.synchronize();
  return download<T>(cuda, out.data(), count);
}

Buffer<float> zero_state(CudaBackend& cuda, const AttentionInputs& in) {
  Buffer<float> state(cuda.allocator(), static_cast<std::size_t>(in.batch_heads * in.dim * in.dim));
  zero_async(cuda, state.data(), state.bytes());
  return state;
}

template <class T>
void expect_decode_equals_last_prefill_row(CudaBackend& cuda, DType dtype, std::int64_t length) {
  const Cell cell = mechanism_cell("gated_deltanet", kHeads, 64, length, dtype);
  const AttentionInputs in = make_attention_inputs(cell, length + 1, 17);
  const GatedDeltaNetGates gates = make_gated_deltanet_gates(cell, length + 1, 17);
  Buffer<float> whole = zero_state(cuda, in);
  const std::vector<float> rows = recurrence<T>(cuda, in, gates, 0, length + 1, whole);
  Buffer<float> stepped = zero_state(cuda, in);
  for (std::int64_t t = 0; t < length; ++t) recurrence<T>(cuda, in, gates, t, 1, stepped);  // decode steps, not a prefill
  const std::vector<float> step = recurrence<T>(cuda, in, gates, length, 1, stepped);
  std::vector<float> last;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    const float* row = rows.data() + (bh * (length + 1) + length) * in.dim;
    last.insert(last.end(), row, row + in.dim);
  }
  const std::string where = dtype_name(dtype) + " L=" + std::to_string(length);
  EXPECT_LT(testing::relative_max_error(step, last), dtype_tolerance(dtype)) << where;
  const auto s_whole = download<float>(cuda, whole.data(), static_cast<std::int64_t>(whole.size()));
  const auto s_step = download<float>(cuda, stepped.data(), static_cast<std::int64_t>(stepped.size()));
  EXPECT_LT(testing::relative_max_error(s_step, s_whole), 1e-5) << where;
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
  Buffer<float> whole = zero_state(cuda, in);
  const std::vector<float> all = recurrence<float>(cuda, in, gates, 0, 160, whole);
  // Tokens [0, 100) then [100, 160), carrying S: 100 is not a stage boundary.
  Buffer<float> carried = zero_state(cuda, in);
  const std::vector<float> head = recurrence<float>(cuda, in, gates, 0, 100, carried);
  const std::vector<float> tail = recurrence<float>(cuda, in, gates, 100, 60, carried);
  std::vector<float> joined;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    joined.insert(joined.end(), head.begin() + bh * 100 * in.dim, head.begin() + (bh + 1) * 100 * in.dim);
    joined.insert(joined.end(), tail.begin() + bh * 60 * in.dim, tail.begin() + (bh + 1) * 60 * in.dim);
  }
  EXPECT_LT(testing::relative_max_error(joined, all), 1e-6);  // the same operations in the same order
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
