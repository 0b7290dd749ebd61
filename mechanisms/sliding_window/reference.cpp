#include "mechanisms/sliding_window/reference.hpp"

#include <stdexcept>

#include "mechanisms/softmax_kv/reference.hpp"

namespace arch_bench {

// softmax_kv's reference with the window: one fp64 softmax for both mechanisms.
std::vector<double> sliding_window_attention_row(const MatrixD& q, const MatrixD& k, const MatrixD& v, std::int64_t t,
                                                 std::int64_t window) {
  if (window < 1) throw std::invalid_argument("sliding window must hold at least one token");
  return softmax_attention_row(q, k, v, t, window);
}

MatrixD sliding_window_attention_reference(const MatrixD& q, const MatrixD& k, const MatrixD& v, std::int64_t window) {
  if (window < 1) throw std::invalid_argument("sliding window must hold at least one token");
  return softmax_attention_reference(q, k, v, window);
}

}  // namespace arch_bench
