#include "mechanisms/rwkv/rwkv4/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace arch_bench {

namespace {
void check_contract(const MatrixD& k, const MatrixD& v, const std::vector<double>& w, const std::vector<double>& u) {
  if (k.rows == 0 || k.cols == 0) throw std::invalid_argument("rwkv4 needs at least one token and one channel");
  if (v.rows != k.rows || v.cols != k.cols) throw std::invalid_argument("rwkv4: v must have the shape of k");
  if (static_cast<std::int64_t>(w.size()) != k.cols || static_cast<std::int64_t>(u.size()) != k.cols) {
    throw std::invalid_argument("rwkv4: w and u need one value per channel (" + std::to_string(k.cols) + ")");
  }
}
}  // namespace

template <class Real>
MatrixD rwkv4_wkv_naive(const MatrixD& k, const MatrixD& v, const std::vector<double>& w,
                        const std::vector<double>& u) {
  check_contract(k, v, w, u);
  MatrixD out(k.rows, k.cols);
  for (std::int64_t c = 0; c < k.cols; ++c) {
    const Real wc = static_cast<Real>(w[c]), uc = static_cast<Real>(u[c]);
    for (std::int64_t t = 0; t < k.rows; ++t) {
      const Real current = std::exp(uc + static_cast<Real>(k(t, c)));
      Real numerator = current * static_cast<Real>(v(t, c)), denominator = current;
      for (std::int64_t i = 0; i < t; ++i) {
        const Real weight = std::exp(-static_cast<Real>(t - 1 - i) * wc + static_cast<Real>(k(i, c)));
        numerator += weight * static_cast<Real>(v(i, c));
        denominator += weight;
      }
      out(t, c) = static_cast<double>(numerator / denominator);
    }
  }
  return out;
}
template MatrixD rwkv4_wkv_naive<double>(const MatrixD&, const MatrixD&, const std::vector<double>&,
                                         const std::vector<double>&);
template MatrixD rwkv4_wkv_naive<float>(const MatrixD&, const MatrixD&, const std::vector<double>&,
                                        const std::vector<double>&);

Rwkv4ReferenceResult rwkv4_wkv_stable(const MatrixD& k, const MatrixD& v, const std::vector<double>& w,
                                      const std::vector<double>& u) {
  check_contract(k, v, w, u);
  const std::int64_t channels = k.cols;
  Rwkv4ReferenceResult r{MatrixD(k.rows, channels), std::vector<double>(channels, 0.0),
                         std::vector<double>(channels, 0.0),
                         std::vector<double>(channels, -std::numeric_limits<double>::infinity())};
  for (std::int64_t t = 0; t < k.rows; ++t) {
    for (std::int64_t c = 0; c < channels; ++c) {
      double& a = r.a[c];
      double& b = r.b[c];
      double& p = r.p[c];
      const double kt = k(t, c), vt = v(t, c);
      // Output: the state's sums plus the current token at e^{u + k_t}, both relative to q.
      const double ww = u[c] + kt;
      double q = std::max(p, ww);
      double e1 = std::exp(p - q), e2 = std::exp(ww - q);
      r.outputs(t, c) = (e1 * a + e2 * vt) / (e1 * b + e2);
      // Update: decay the sums by e^{-w}, add e^{k_t}.
      const double decayed = p - w[c];
      q = std::max(decayed, kt);
      e1 = std::exp(decayed - q);
      e2 = std::exp(kt - q);
      a = e1 * a + e2 * vt;
      b = e1 * b + e2;
      p = q;
    }
  }
  return r;
}

}  // namespace arch_bench
