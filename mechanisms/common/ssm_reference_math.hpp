#pragma once
// What the fp64 references of mamba and mamba2 (mechanisms/mamba*/reference.cpp) share: the scalar
// maps of the layer in fp64 (the kernels' fp32 forms are ssm_activations.hpp) and the shape check
// of their matrix arguments.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// softplus(x) = log(1 + e^x), without overflow for large |x|.
inline double softplus_fp64(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// silu(x) = x sigmoid(x).
inline double silu_fp64(double x) { return x / (1.0 + std::exp(-x)); }

// Throws std::invalid_argument naming `name`, the shape it must have and the one it has.
inline void expect_matrix_shape(const MatrixD& m, std::int64_t rows, std::int64_t cols, const char* name) {
  if (m.rows != rows || m.cols != cols) {
    throw std::invalid_argument(std::string(name) + " must be [" + std::to_string(rows) + ", " +
                                std::to_string(cols) + "], got [" + std::to_string(m.rows) + ", " +
                                std::to_string(m.cols) + "]");
  }
}

}  // namespace arch_bench
