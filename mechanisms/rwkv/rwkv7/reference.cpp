#include "mechanisms/rwkv/rwkv7/reference.hpp"

#include <cmath>
#include <stdexcept>

namespace arch_bench {

RwkvMatrixResult rwkv7_reference(const MatrixD& r, const MatrixD& w_raw, const MatrixD& k, const MatrixD& v,
                                 const MatrixD& kappa, const MatrixD& iclr) {
  const std::int64_t tokens = r.rows, dim = r.cols;
  if (tokens == 0 || dim == 0) throw std::invalid_argument("rwkv7 needs at least one token and one channel");
  for (const MatrixD* m : {&w_raw, &k, &v, &kappa, &iclr}) {
    if (m->rows != tokens || m->cols != dim) {
      throw std::invalid_argument("rwkv7: r, w_raw, k, v, kappa and iclr must have one shape");
    }
  }
  RwkvMatrixResult result{MatrixD(tokens, dim), MatrixD(dim, dim)};
  MatrixD& S = result.state;
  std::vector<double> w(dim), a(dim), b(dim);
  const double scale = std::exp(-0.5);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t j = 0; j < dim; ++j) {
      w[j] = std::exp(-scale / (1.0 + std::exp(-w_raw(t, j))));
      a[j] = -kappa(t, j);
      b[j] = kappa(t, j) * iclr(t, j);
    }
    for (std::int64_t i = 0; i < dim; ++i) {
      double sa = 0;
      for (std::int64_t j = 0; j < dim; ++j) sa += S(i, j) * a[j];
      double o = 0;
      for (std::int64_t j = 0; j < dim; ++j) {
        S(i, j) = S(i, j) * w[j] + sa * b[j] + v(t, i) * k(t, j);
        o += S(i, j) * r(t, j);
      }
      result.outputs(t, i) = o;
    }
  }
  return result;
}

}  // namespace arch_bench
