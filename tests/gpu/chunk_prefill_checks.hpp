#pragma once
// The chunkwise tensor-core prefills (retnet's through common/chunk_scalar_decay.cuh, gated_deltanet's
// through common/chunk_delta_rule.cuh) against their mechanism's column recurrence on a device,
// written once for both tests: the same outputs and final state from a zero state, and a chunked
// prefill in two pieces that carries a nonzero state across the cut. A test supplies `run`, which
// puts tokens [first, first + rows) of every head through the recurrence (chunked = false) or the
// chunked kernels (true), continuing from `state` (updated in place), and returns a PrefillRun.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "mechanisms/common/inputs.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench::testing {

struct PrefillRun {
  std::vector<float> out;    // [bh, rows, dim]
  std::vector<float> state;  // [bh, dim, dim], after the run
};

inline Buffer<float> zero_state(CudaBackend& cuda, const AttentionInputs& in) {
  Buffer<float> state(cuda.allocator(), static_cast<std::size_t>(in.batch_heads * in.dim * in.dim));
  zero_async(cuda, state.data(), state.bytes());
  return state;
}

// Tokens [0, length) of `in` through both forms from a zero state.
template <class Run>
void expect_chunked_prefill_equals_recurrence(CudaBackend& cuda, const AttentionInputs& in, std::int64_t length,
                                              Run run) {
  Buffer<float> recurrent_state = zero_state(cuda, in), chunked_state = zero_state(cuda, in);
  const PrefillRun recurrent = run(0, length, recurrent_state, false);
  const PrefillRun chunked = run(0, length, chunked_state, true);
  const std::string where = "L=" + std::to_string(length);
  EXPECT_LT(relative_max_error(chunked.out, recurrent.out), dtype_tolerance(DType::bfloat16)) << where;
  EXPECT_LT(relative_max_error(chunked.state, recurrent.state), dtype_tolerance(DType::bfloat16)) << where;
}

// `in` holds at least 230 tokens: [0, 230) through the recurrence against [0, 100) then [100, 230)
// chunkwise, carrying S. Neither 100 nor 130 is a chunk multiple, and the second run's inter-chunk
// terms start from a nonzero state.
template <class Run>
void expect_chunked_prefill_continues_from_its_state(CudaBackend& cuda, const AttentionInputs& in, Run run) {
  constexpr std::int64_t kHead = 100, kTail = 130;
  Buffer<float> whole = zero_state(cuda, in);
  const PrefillRun all = run(0, kHead + kTail, whole, false);
  Buffer<float> carried = zero_state(cuda, in);
  const PrefillRun head = run(0, kHead, carried, true);
  const PrefillRun tail = run(kHead, kTail, carried, true);
  std::vector<float> joined;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    joined.insert(joined.end(), head.out.begin() + bh * kHead * in.dim, head.out.begin() + (bh + 1) * kHead * in.dim);
    joined.insert(joined.end(), tail.out.begin() + bh * kTail * in.dim, tail.out.begin() + (bh + 1) * kTail * in.dim);
  }
  EXPECT_LT(relative_max_error(joined, all.out), dtype_tolerance(DType::bfloat16));
  EXPECT_LT(relative_max_error(tail.state, all.state), dtype_tolerance(DType::bfloat16));
}

}  // namespace arch_bench::testing
