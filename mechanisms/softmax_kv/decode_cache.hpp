#pragma once
// Rows per K/V head of the decode cache the prepared cells (cpu_cells.cpp, cuda_cells.cpp) build at
// position L: every token's, L + 1 (softmax_kv), or sliding_window's ring of min(L + 1, W) slots
// (mechanisms/sliding_window/ring.hpp): token p in row p % rows, the new token L in row L % rows.
#include <algorithm>
#include <cstdint>

namespace arch_bench {

inline std::int64_t decode_cache_rows(std::int64_t length, std::int64_t window) {
  return window > 0 ? std::min(length + 1, window) : length + 1;
}

}  // namespace arch_bench
