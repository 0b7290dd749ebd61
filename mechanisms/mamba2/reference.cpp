#include "mechanisms/mamba2/reference.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace arch_bench {

namespace {
void expect_shape(const MatrixD& m, std::int64_t rows, std::int64_t cols, const char* name) {
  if (m.rows != rows || m.cols != cols) {
    throw std::invalid_argument(std::string(name) + " must be [" + std::to_string(rows) + ", " +
                                std::to_string(cols) + "], got [" + std::to_string(m.rows) + ", " +
                                std::to_string(m.cols) + "]");
  }
}

double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
double silu(double x) { return x / (1.0 + std::exp(-x)); }
}  // namespace

Mamba2ReferenceResult mamba2_ssd_scan(const Mamba2HeadSequenceD& x, const Mamba2HeadParametersD& p) {
  const std::int64_t tokens = x.x.rows, width = x.x.cols, n = x.B.cols;
  if (tokens == 0) throw std::invalid_argument("mamba2_ssd_scan needs at least one token");
  if (width == 0) throw std::invalid_argument("x must have at least one channel (P > 0)");
  if (n == 0) throw std::invalid_argument("B must have at least one state column (N > 0)");
  expect_shape(x.z, tokens, width, "z");
  expect_shape(x.B, tokens, n, "B");
  expect_shape(x.C, tokens, n, "C");
  if (static_cast<std::int64_t>(x.dt_raw.size()) != tokens) {
    throw std::invalid_argument("dt_raw must have one entry per token (" + std::to_string(tokens) + ")");
  }
  Mamba2ReferenceResult result{MatrixD(tokens, width), MatrixD(width, n)};
  for (std::int64_t t = 0; t < tokens; ++t) {
    const double dt = softplus(x.dt_raw[t] + p.dt_bias);
    const double a = std::exp(dt * p.A);
    for (std::int64_t i = 0; i < width; ++i) {
      double* h = result.state.row(i);
      const double update = dt * x.x(t, i);
      double y = 0;
      for (std::int64_t s = 0; s < n; ++s) {
        h[s] = a * h[s] + update * x.B(t, s);
        y += h[s] * x.C(t, s);
      }
      result.outputs(t, i) = (y + p.D * x.x(t, i)) * silu(x.z(t, i));
    }
  }
  return result;
}

}  // namespace arch_bench
