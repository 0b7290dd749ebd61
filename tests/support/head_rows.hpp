#pragma once
// Row bookkeeping of the tests that compare a kernel against itself: outputs in the kernels'
// layout [heads, rows, dim], from which a decode step is compared with one row of a prefill, and a
// prefill split in two is joined back to compare with the whole.
#include <cstdint>
#include <vector>

namespace arch_bench::testing {

// Row `row` of every head of out [heads, rows, dim]: [heads, dim].
inline std::vector<float> row_of_every_head(const std::vector<float>& out, std::int64_t heads, std::int64_t rows,
                                            std::int64_t row, std::int64_t dim) {
  std::vector<float> picked;
  for (std::int64_t h = 0; h < heads; ++h) {
    const float* first = out.data() + (h * rows + row) * dim;
    picked.insert(picked.end(), first, first + dim);
  }
  return picked;
}

// head [heads, head_rows, dim] and tail [heads, tail_rows, dim] joined along the rows of each head.
inline std::vector<float> join_rows(const std::vector<float>& head, std::int64_t head_rows,
                                    const std::vector<float>& tail, std::int64_t tail_rows, std::int64_t heads,
                                    std::int64_t dim) {
  std::vector<float> joined;
  for (std::int64_t h = 0; h < heads; ++h) {
    joined.insert(joined.end(), head.begin() + h * head_rows * dim, head.begin() + (h + 1) * head_rows * dim);
    joined.insert(joined.end(), tail.begin() + h * tail_rows * dim, tail.begin() + (h + 1) * tail_rows * dim);
  }
  return joined;
}

}  // namespace arch_bench::testing
