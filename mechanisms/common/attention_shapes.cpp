#include "mechanisms/common/attention_shapes.hpp"

#include <stdexcept>

namespace arch_bench {

void check_attention_shapes(const MatrixD& q, const MatrixD& k, const MatrixD& v) {
  if (q.rows == 0 || q.cols == 0 || v.cols == 0) {
    throw std::invalid_argument("q, k and v must be non-empty [tokens, dim] matrices");
  }
  if (q.rows != k.rows || q.cols != k.cols) {
    throw std::invalid_argument("q and k must have the same shape");
  }
  if (v.rows != q.rows) {
    throw std::invalid_argument("v must have as many tokens as q and k");
  }
}

}  // namespace arch_bench
