#pragma once
// What a cell costs the process, not only its backend buffers (docs/design.md, "Mechanism
// contract"; issue 42, item 6). predicted_peak_bytes counts the buffers the backend allocator
// tracks; a prepared cell also holds the fp32 inputs it drew (the fp64 check reads them), stages a
// decode cell's context in the storage dtype while it builds the state, and its check() holds the
// fp64 reference's results. At --batch 5000 those were 9x the backend buffers, and a run that the
// buffers said would fit was killed by the kernel's OOM killer. Mechanism::predicted_process_bytes
// adds them up with these helpers; tests/test_process_memory.cpp holds every built-in's prediction
// to the resident set it measures.
#include <algorithm>
#include <cstdint>

#include "core/cell.hpp"
#include "core/checked_size.hpp"
#include "core/dtype.hpp"

namespace arch_bench {

// The harness's share beyond what a mechanism states: the host allocator rounds every buffer of
// 2 MiB or more up to whole huge pages plus a colour offset (up to 2 MiB more each,
// core/backends/cpu/cpu_backend.cpp), and the OpenMP team's stacks and malloc arenas grow with the
// first cell. 32 MiB covers 16 rounded buffers; the largest built-in cell has 11.
inline constexpr std::int64_t kProcessOverheadBytes = std::int64_t{32} << 20;

// Tokens a cell draws inputs for: decode L + 1 (the context and the new token), prefill L.
inline std::int64_t drawn_tokens(const Cell& cell) {
  return cell.phase == Phase::decode ? checked_add(cell.sequence_length, 1) : cell.sequence_length;
}

// `streams` fp32 tensors [batch_heads, drawn tokens, head_dim]: what make_attention_inputs draws
// (q, k, v: 3) and the cell keeps until it is destroyed.
inline std::int64_t drawn_attention_bytes(const Cell& cell, std::int64_t streams) {
  return checked_product(streams, cell.batch_heads(), drawn_tokens(cell), cell.head_dim, 4);
}

// A decode cell's context in the storage dtype, `streams` tensors [batch_heads, L, head_dim] (the
// context prefill's inputs and its output), held while prepare() builds the state; 0 for prefill.
inline std::int64_t staged_context_bytes(const Cell& cell, std::int64_t streams) {
  if (cell.phase != Phase::decode) return 0;
  return checked_product(streams, cell.batch_heads(), cell.sequence_length, cell.head_dim,
                         static_cast<std::int64_t>(dtype_bytes(cell.dtype)));
}

// `matrices` fp64 [drawn tokens, head_dim] matrices of one (batch, head) row: what a check that runs
// the reference head by head holds at once (its inputs widened to fp64, its outputs, its scratch).
inline std::int64_t reference_head_bytes(const Cell& cell, std::int64_t matrices) {
  return checked_product(matrices, drawn_tokens(cell), cell.head_dim, 8);
}

// The parts of a cell's process memory, by lifetime: `backend` and `drawn` live from prepare() to
// the cell's end; `staged` only inside prepare(), `checked` only inside check(), never both at once.
struct ProcessBytes {
  std::int64_t backend = 0;  // predicted_peak_bytes: the buffers the backend allocator tracks
  std::int64_t drawn = 0;    // the inputs drawn for the fp64 check, fp32
  std::int64_t staged = 0;   // set-up copies (a decode cell's context), freed before check()
  std::int64_t checked = 0;  // what check() holds: the reference's inputs and results

  std::int64_t total() const {
    return checked_sum(backend, drawn, std::max(staged, checked), kProcessOverheadBytes);
  }
};

}  // namespace arch_bench
