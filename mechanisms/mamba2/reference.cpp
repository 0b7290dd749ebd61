#include "mechanisms/mamba2/reference.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "mechanisms/common/ssm_reference_math.hpp"

namespace arch_bench {

Mamba2ReferenceResult mamba2_ssd_scan(const Mamba2HeadSequenceD& x, const Mamba2HeadParametersD& p) {
  const std::int64_t tokens = x.x.rows, width = x.x.cols, n = x.B.cols;
  if (tokens == 0) throw std::invalid_argument("mamba2_ssd_scan needs at least one token");
  if (width == 0) throw std::invalid_argument("x must have at least one channel (P > 0)");
  if (n == 0) throw std::invalid_argument("B must have at least one state column (N > 0)");
  expect_matrix_shape(x.z, tokens, width, "z");
  expect_matrix_shape(x.B, tokens, n, "B");
  expect_matrix_shape(x.C, tokens, n, "C");
  if (static_cast<std::int64_t>(x.dt_raw.size()) != tokens) {
    throw std::invalid_argument("dt_raw must have one entry per token (" + std::to_string(tokens) + ")");
  }
  Mamba2ReferenceResult result{MatrixD(tokens, width), MatrixD(width, n)};
  for (std::int64_t t = 0; t < tokens; ++t) {
    const double dt = softplus_fp64(x.dt_raw[t] + p.dt_bias);
    const double a = std::exp(dt * p.A);
    for (std::int64_t i = 0; i < width; ++i) {
      double* h = result.state.row(i);
      const double update = dt * x.x(t, i);
      double y = 0;
      for (std::int64_t s = 0; s < n; ++s) {
        h[s] = a * h[s] + update * x.B(t, s);
        y += h[s] * x.C(t, s);
      }
      result.outputs(t, i) = (y + p.D * x.x(t, i)) * silu_fp64(x.z(t, i));
    }
  }
  return result;
}

}  // namespace arch_bench
