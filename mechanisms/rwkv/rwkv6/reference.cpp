#include "mechanisms/rwkv/rwkv6/reference.hpp"

#include <cmath>
#include <stdexcept>

namespace arch_bench {

RwkvMatrixResult rwkv6_reference(const MatrixD& r, const MatrixD& k, const MatrixD& v, const MatrixD& d,
                                 const std::vector<double>& u) {
  const std::int64_t tokens = r.rows, dim = r.cols;
  if (tokens == 0 || dim == 0) throw std::invalid_argument("rwkv6 needs at least one token and one channel");
  for (const MatrixD* m : {&k, &v, &d}) {
    if (m->rows != tokens || m->cols != dim) throw std::invalid_argument("rwkv6: r, k, v and d must have one shape");
  }
  if (static_cast<std::int64_t>(u.size()) != dim) throw std::invalid_argument("rwkv6: u needs one value per channel");
  RwkvMatrixResult result{MatrixD(tokens, dim), MatrixD(dim, dim)};
  MatrixD& S = result.state;
  std::vector<double> w(dim);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t i = 0; i < dim; ++i) w[i] = std::exp(-std::exp(d(t, i)));
    double* o = result.outputs.row(t);
    for (std::int64_t i = 0; i < dim; ++i) {
      const double ri = r(t, i), ki = k(t, i);
      for (std::int64_t j = 0; j < dim; ++j) {
        o[j] += ri * (S(i, j) + u[i] * ki * v(t, j));
        S(i, j) = w[i] * S(i, j) + ki * v(t, j);
      }
    }
  }
  return result;
}

}  // namespace arch_bench
