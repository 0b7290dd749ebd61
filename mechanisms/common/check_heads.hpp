#pragma once
// Prepared-cell checks of the mechanisms whose fp64 reference runs per (batch, head) row
// (linear_attention, retnet, gated_deltanet, rwkv): the outputs against the reference's rows. A
// reference is reference(bh, rows) -> the outputs [rows, width] (MatrixD) of row bh over tokens
// [0, rows) (and mamba2's heads likewise). It is called from several threads at once: it must only
// read what it shares. check_heads_in_parallel is also how softmax_kv/sliding_window (per head) and
// mamba (per batch element) spread their checks.
#include <cstdint>

#include "core/stop_request.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// The heads are independent, so they are checked on the run's OpenMP team: the fp64 reference is
// O(L d^2) per head, and at a batch of 16 x 8 heads and L = 8192 a serial check was most of a GPU
// run's wall time (85 s of the 2026-12-04 H200's batch-16 decode run). Each head's error measures go
// into its thread's accumulator and the accumulators are merged: maxima, so the result is the serial
// one exactly. A stop request is polled between heads; the exception is raised after the region,
// which an exception must not leave.
template <class CheckHead>
Accuracy check_heads_in_parallel(std::int64_t batch_heads, const CheckHead& check_head) {
  ErrorAccumulator total;
  bool stopped = false;
#pragma omp parallel
  {
    ErrorAccumulator mine;
#pragma omp for schedule(dynamic) nowait
    for (std::int64_t bh = 0; bh < batch_heads; ++bh) {
      if (stop_requested()) {
#pragma omp atomic write
        stopped = true;
        continue;
      }
      check_head(bh, mine);
    }
#pragma omp critical(arch_bench_check_heads)
    total.merge(mine);
  }
  if (stopped) throw_if_stop_requested("checking the outputs against the fp64 reference");
  return total.finish();
}

// Decode at position `position`: out [batch_heads, width] against row `position` of each head's
// reference over position + 1 tokens.
template <class T, class Reference>
Accuracy check_decode_heads(const T* out, std::int64_t batch_heads, std::int64_t width, std::int64_t position,
                            const Reference& reference) {
  return check_heads_in_parallel(batch_heads, [&](std::int64_t bh, ErrorAccumulator& errors) {
    const MatrixD ref = reference(bh, position + 1);
    errors.add_row(out + bh * width, ref.row(position), width);
  });
}

// Prefill: every row of out [batch_heads, tokens, width].
template <class T, class Reference>
Accuracy check_prefill_heads(const T* out, std::int64_t batch_heads, std::int64_t tokens, std::int64_t width,
                             const Reference& reference) {
  if (tokens == 0) return ErrorAccumulator().finish();  // an empty prefill has no rows (the scans reject it)
  return check_heads_in_parallel(batch_heads, [&](std::int64_t bh, ErrorAccumulator& errors) {
    const MatrixD ref = reference(bh, tokens);
    for (std::int64_t t = 0; t < tokens; ++t) errors.add_row(out + (bh * tokens + t) * width, ref.row(t), width);
  });
}

}  // namespace arch_bench
