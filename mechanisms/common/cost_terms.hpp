#pragma once
// The terms the built-in mechanisms write their backends, costs and memory predictions in
// (docs/design.md, "Mechanism contract"), named once so that each mechanism.cpp states only its own
// counting rules.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cell.hpp"
#include "core/checked_size.hpp"
#include "core/dtype.hpp"

namespace arch_bench {

// The backends of a mechanism with CPU and CUDA kernels, in this build: "cuda" only where CUDA was
// compiled in (MechanismInfo::backends).
inline std::vector<std::string> cpu_and_cuda_backends() {
#if ARCH_BENCH_HAVE_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

// Tokens one run of a cell reads and writes: a decode step 1, a prefill L.
inline std::int64_t run_tokens(const Cell& cell) {
  return cell.phase == Phase::decode ? 1 : cell.sequence_length;
}

// q, k and v read and the output written by one run: 4 tensors [batch_heads, run tokens, head_dim]
// in the storage dtype.
inline std::int64_t qkv_out_bytes(const Cell& cell) {
  return checked_product(4, run_tokens(cell), cell.batch_heads(), cell.head_dim,
                         static_cast<std::int64_t>(dtype_bytes(cell.dtype)));
}

// A head_dim x head_dim fp32 state per (batch, head), whatever the storage dtype (RetNet's and
// Gated DeltaNet's S): its floats (what a cell allocates) and its bytes.
inline std::size_t square_state_floats(const Cell& cell) {
  return static_cast<std::size_t>(checked_product(cell.batch_heads(), cell.head_dim, cell.head_dim));
}
inline std::int64_t square_fp32_state_bytes(const Cell& cell) {
  return checked_product(cell.batch_heads(), cell.head_dim, cell.head_dim, 4);
}

// What a per-head Cost formula is written in, as doubles: the storage dtype's bytes e, the
// (batch, head) rows bh, the head_dim d and the state's bytes. Read with a structured binding:
// `const auto [e, bh, d, state] = head_cost_terms(cell, state_bytes(cell));`.
struct HeadCostTerms {
  double e;
  double bh;
  double d;
  double state;
};

inline HeadCostTerms head_cost_terms(const Cell& cell, std::int64_t state_bytes) {
  return {static_cast<double>(dtype_bytes(cell.dtype)), static_cast<double>(cell.batch_heads()),
          static_cast<double>(cell.head_dim), static_cast<double>(state_bytes)};
}

// What softmax attention's Cost formulas (softmax_kv, sliding_window) are written in, as doubles: e,
// the query heads bh and the K/V heads kv of the batch, d and the context L. Read with
// `const auto [e, bh, kv, d, length] = attention_cost_terms(cell, batch_kv_heads_of(cell));`.
struct AttentionCostTerms {
  double e, bh, kv, d, length;
};

inline AttentionCostTerms attention_cost_terms(const Cell& cell, std::int64_t batch_kv_heads) {
  return {static_cast<double>(dtype_bytes(cell.dtype)), static_cast<double>(cell.batch_heads()),
          static_cast<double>(batch_kv_heads), static_cast<double>(cell.head_dim),
          static_cast<double>(cell.sequence_length)};
}

}  // namespace arch_bench
