#pragma once
// Which output rows a prefill check compares with the reference. Exact references cost O(L^2)
// for softmax, so long prefills are checked on a fixed spread of rows that always includes the
// first and the last (where accumulation error is largest).
#include <algorithm>
#include <cstdint>
#include <vector>

namespace arch_bench {

inline std::vector<std::int64_t> rows_to_check(std::int64_t tokens, std::int64_t max_rows) {
  std::vector<std::int64_t> rows;
  if (tokens <= max_rows) {
    for (std::int64_t t = 0; t < tokens; ++t) rows.push_back(t);
    return rows;
  }
  for (std::int64_t i = 0; i < max_rows; ++i) rows.push_back(i * (tokens - 1) / (max_rows - 1));
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

}  // namespace arch_bench
