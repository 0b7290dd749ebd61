#pragma once
// The column recurrence kernels (retnet's and gated_deltanet's, mechanisms/common/column_recurrence.cuh)
// against themselves on a device: a decode at position L, after L decode steps, equals the last row
// of a prefill over L + 1 tokens with the same final state, and a prefill continues from the state
// it is given. Written once here as a type-parameterised suite; each mechanism's test supplies a
// Kernel (how it draws its inputs and runs tokens [first, first + rows) of them from a state, with
// its own launch and extra inputs) and instantiates the suite with it.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "gpu/device_tokens.hpp"
#include "support/gpu.hpp"
#include "support/head_rows.hpp"
#include "mechanisms/common/column_recurrence_plan.hpp"
#include "mechanisms/common/inputs.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench::testing {

// Tokens [first, first + rows) of every head through `launch(tokens)` (a DeviceTokens<T>); returns
// out [bh, rows, dim].
template <class T, class Launch>
std::vector<float> run_column_recurrence(CudaBackend& cuda, const AttentionInputs& in, std::int64_t first,
                                         std::int64_t rows, Launch launch) {
  DeviceTokens<T> tokens(cuda, in, first, rows);
  launch(tokens);
  return tokens.output(cuda);
}

inline Buffer<float> zero_column_state(CudaBackend& cuda, const AttentionInputs& in) {
  Buffer<float> state(cuda.allocator(), static_cast<std::size_t>(in.batch_heads * in.dim * in.dim));
  zero_async(cuda, state.data(), state.bytes());
  return state;
}

// `recurrence(first, rows, state)` runs tokens [first, first + rows) from `state` (updated in place)
// and returns out [bh, rows, dim] for tokens of `dtype`; `in` holds at least length + 1 tokens.
template <class Recurrence>
void expect_decode_equals_last_prefill_row(CudaBackend& cuda, const AttentionInputs& in, DType dtype,
                                           std::int64_t length, Recurrence recurrence) {
  Buffer<float> whole = zero_column_state(cuda, in);
  const std::vector<float> rows = recurrence(0, length + 1, whole);
  Buffer<float> stepped = zero_column_state(cuda, in);
  for (std::int64_t t = 0; t < length; ++t) recurrence(t, 1, stepped);  // decode steps, not a prefill
  const std::vector<float> step = recurrence(length, 1, stepped);
  const std::vector<float> last = row_of_every_head(rows, in.batch_heads, length + 1, length, in.dim);
  const std::string where = dtype_name(dtype) + " L=" + std::to_string(length);
  EXPECT_LT(relative_max_error(step, last), dtype_tolerance(dtype)) << where;
  const auto s_whole = download<float>(cuda, whole.data(), static_cast<std::int64_t>(whole.size()));
  const auto s_step = download<float>(cuda, stepped.data(), static_cast<std::int64_t>(stepped.size()));
  EXPECT_LT(relative_max_error(s_step, s_whole), 1e-5) << where;
}

// Tokens [0, 160) at once against [0, 100) then [100, 160) carrying S (100 is not a stage boundary);
// `in` holds 160 fp32 tokens.
template <class Recurrence>
void expect_prefill_continues_from_its_state(CudaBackend& cuda, const AttentionInputs& in, Recurrence recurrence) {
  Buffer<float> whole = zero_column_state(cuda, in);
  const std::vector<float> all = recurrence(0, 160, whole);
  Buffer<float> carried = zero_column_state(cuda, in);
  const std::vector<float> head = recurrence(0, 100, carried);
  const std::vector<float> tail = recurrence(100, 60, carried);
  const std::vector<float> joined = join_rows(head, 100, tail, 60, in.batch_heads, in.dim);
  EXPECT_LT(relative_max_error(joined, all), 1e-6);  // the same operations in the same order
}

}  // namespace arch_bench::testing

// The suite is in arch_bench (not testing) so that the mechanisms' tests instantiate it by its name.
namespace arch_bench {

// What a Kernel of the suite below provides:
//   static constexpr const char* mechanism;             the registered id, for the cell drawn
//   Kernel(const Cell& cell, std::int64_t tokens, std::uint64_t seed);   seeded inputs, in `in`
//   AttentionInputs in;
//   template <class T> std::vector<float> run(CudaBackend&, std::int64_t first, std::int64_t rows,
//                                             Buffer<float>& state) const;   out [bh, rows, dim]
template <class Kernel>
class ColumnRecurrenceKernelGpu : public ::testing::Test {
 protected:
  static constexpr std::int64_t kHeads = 4;

  template <class T>
  static void expect_decode_equals_last_prefill_row(CudaBackend& cuda, DType dtype, std::int64_t length) {
    const Kernel kernel(testing::mechanism_cell(Kernel::mechanism, kHeads, 64, length, dtype), length + 1, 17);
    testing::expect_decode_equals_last_prefill_row(
        cuda, kernel.in, dtype, length, [&](std::int64_t first, std::int64_t rows, Buffer<float>& state) {
          return kernel.template run<T>(cuda, first, rows, state);
        });
  }
};

TYPED_TEST_SUITE_P(ColumnRecurrenceKernelGpu);

TYPED_TEST_P(ColumnRecurrenceKernelGpu, DecodeAtLEqualsLastRowOfPrefillOverLPlusOneTokens) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t length : {0, 1, 15, 16, 17, 100}) {
    TestFixture::template expect_decode_equals_last_prefill_row<float>(cuda, DType::float32, length);
    TestFixture::template expect_decode_equals_last_prefill_row<bf16>(cuda, DType::bfloat16, length);
  }
}

TYPED_TEST_P(ColumnRecurrenceKernelGpu, PrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const TypeParam kernel(testing::mechanism_cell(TypeParam::mechanism, TestFixture::kHeads, 64, 0, DType::float32), 160, 19);
  testing::expect_prefill_continues_from_its_state(
      cuda, kernel.in, [&](std::int64_t first, std::int64_t rows, Buffer<float>& state) {
        return kernel.template run<float>(cuda, first, rows, state);
      });
}

REGISTER_TYPED_TEST_SUITE_P(ColumnRecurrenceKernelGpu, DecodeAtLEqualsLastRowOfPrefillOverLPlusOneTokens,
                            PrefillContinuesFromTheStateItIsGiven);

}  // namespace arch_bench
