#include "mechanisms/retnet/reference.hpp"

#include <cmath>

#include "mechanisms/common/attention_shapes.hpp"

namespace arch_bench {

double retnet_gamma(std::int64_t head) { return 1.0 - std::ldexp(1.0, static_cast<int>(-5 - head)); }

RetNetResult retnet_scan(const MatrixD& q, const MatrixD& k, const MatrixD& v, double gamma) {
  check_attention_shapes(q, k, v);
  RetNetResult result{MatrixD(q.rows, v.cols), MatrixD(q.cols, v.cols)};
  MatrixD& state = result.state;
  for (std::int64_t t = 0; t < q.rows; ++t) {
    // Update first: o_t reads the state that already holds token t (causal, inclusive).
    for (std::int64_t i = 0; i < q.cols; ++i) {
      for (std::int64_t j = 0; j < v.cols; ++j) state(i, j) = gamma * state(i, j) + k(t, i) * v(t, j);
    }
    for (std::int64_t j = 0; j < v.cols; ++j) {
      double sum = 0;
      for (std::int64_t i = 0; i < q.cols; ++i) sum += q(t, i) * state(i, j);
      result.outputs(t, j) = sum;
    }
  }
  return result;
}

MatrixD retnet_recall(const MatrixD& keys, const MatrixD& values, double gamma) {
  MatrixD state(keys.cols, values.cols), read(keys.rows, values.cols);
  for (std::int64_t t = 0; t < keys.rows; ++t) {
    for (std::int64_t i = 0; i < keys.cols; ++i) {
      for (std::int64_t j = 0; j < values.cols; ++j) state(i, j) = gamma * state(i, j) + keys(t, i) * values(t, j);
    }
  }
  for (std::int64_t t = 0; t < keys.rows; ++t) {
    for (std::int64_t i = 0; i < keys.cols; ++i) {
      for (std::int64_t j = 0; j < values.cols; ++j) read(t, j) += keys(t, i) * state(i, j);
    }
  }
  return read;
}

}  // namespace arch_bench
