#include "mechanisms/mamba/reference.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "mechanisms/common/ssm_reference_math.hpp"

namespace arch_bench {

namespace {
void check_contract(const MambaSequenceD& x, const MambaParametersD& p) {
  const std::int64_t tokens = x.u.rows, channels = x.u.cols, n = p.A_log.cols;
  if (tokens == 0) throw std::invalid_argument("mamba_selective_scan needs at least one token");
  if (channels == 0) throw std::invalid_argument("u must have at least one channel (d_inner > 0)");
  if (n == 0) throw std::invalid_argument("A_log must have at least one state column (N > 0)");
  expect_matrix_shape(x.dt_raw, tokens, channels, "dt_raw");
  expect_matrix_shape(x.z, tokens, channels, "z");
  expect_matrix_shape(x.B, tokens, n, "B");
  expect_matrix_shape(x.C, tokens, n, "C");
  expect_matrix_shape(p.A_log, channels, n, "A_log");
  if (static_cast<std::int64_t>(p.dt_bias.size()) != channels) {
    throw std::invalid_argument("dt_bias must have d_inner = " + std::to_string(channels) + " entries");
  }
  if (static_cast<std::int64_t>(p.D.size()) != channels) {
    throw std::invalid_argument("D must have d_inner = " + std::to_string(channels) + " entries");
  }
}
}  // namespace

MambaReferenceResult mamba_selective_scan(const MambaSequenceD& x, const MambaParametersD& p) {
  check_contract(x, p);
  const std::int64_t tokens = x.u.rows, channels = x.u.cols, n = p.A_log.cols;
  MambaReferenceResult result{MatrixD(tokens, channels), MatrixD(channels, n)};
  MatrixD A(channels, n);
  for (std::size_t i = 0; i < A.data.size(); ++i) A.data[i] = -std::exp(p.A_log.data[i]);
  // Token-major walk: the whole state (d_inner x N) stays in cache while the tokens stream past.
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t c = 0; c < channels; ++c) {
      double* h = result.state.row(c);
      const double u = x.u(t, c);
      const double dt = softplus_fp64(x.dt_raw(t, c) + p.dt_bias[c]);
      double y = 0;
      for (std::int64_t s = 0; s < n; ++s) {
        h[s] = std::exp(dt * A(c, s)) * h[s] + dt * x.B(t, s) * u;
        y += x.C(t, s) * h[s];
      }
      result.outputs(t, c) = (y + p.D[c] * u) * silu_fp64(x.z(t, c));
    }
  }
  return result;
}

}  // namespace arch_bench
