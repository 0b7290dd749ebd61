#pragma once
// Row-major fp64 matrix used by the references: [rows = tokens, cols = features] for one head.
#include <cstdint>
#include <vector>

namespace arch_bench {

struct MatrixD {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<double> data;

  MatrixD() = default;
  MatrixD(std::int64_t rows_, std::int64_t cols_)
      : rows(rows_), cols(cols_), data(static_cast<std::size_t>(rows_ * cols_), 0.0) {}
  double& operator()(std::int64_t r, std::int64_t c) { return data[r * cols + c]; }
  double operator()(std::int64_t r, std::int64_t c) const { return data[r * cols + c]; }
  const double* row(std::int64_t r) const { return data.data() + r * cols; }
  double* row(std::int64_t r) { return data.data() + r * cols; }
};

}  // namespace arch_bench
