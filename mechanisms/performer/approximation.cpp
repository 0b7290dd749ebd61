#include "mechanisms/performer/approximation.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "core/stop_request.hpp"
#include "core/bf16.hpp"
#include "mechanisms/common/check_rows.hpp"
#include "mechanisms/softmax_kv/reference.hpp"

namespace arch_bench {

namespace {

struct Sums {
  double diff_squared = 0, exact_squared = 0, max_abs = 0;
  bool finite = true;
};

template <class T>
void add_row(Sums& sums, const T* out, const std::vector<double>& exact) {
  for (std::size_t j = 0; j < exact.size(); ++j) {
    const double value = to_float(out[j]);
    if (!std::isfinite(value)) sums.finite = false;
    const double diff = value - exact[j];
    sums.diff_squared += diff * diff;
    sums.exact_squared += exact[j] * exact[j];
    sums.max_abs = std::fmax(sums.max_abs, std::fabs(diff));
  }
}

// Compares the rows `rows` of every head; `row_of(bh, t)` is where the output row lives.
template <class T, class RowOf>
SoftmaxApproximationError compare(const AttentionInputs& inputs, const std::vector<std::int64_t>& rows,
                                  RowOf row_of) {
  const std::int64_t heads = inputs.batch_heads;
  const std::int64_t needed = rows.empty() ? 0 : rows.back() + 1;
  std::vector<Sums> per_head(static_cast<std::size_t>(heads));
  // Heads are independent; exact rows of long prefills are the expensive part of a check.
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t bh = 0; bh < heads; ++bh) {
    if (stop_requested()) continue;  // raised after the region (core/stop_request.hpp)
    const MatrixD q = inputs.head_matrix(inputs.q, bh, needed);
    const MatrixD k = inputs.head_matrix(inputs.k, bh, needed);
    const MatrixD v = inputs.head_matrix(inputs.v, bh, needed);
    for (std::int64_t t : rows) add_row(per_head[bh], row_of(bh, t), softmax_attention_row(q, k, v, t));
  }
  throw_if_stop_requested("comparing the outputs with exact softmax attention");
  Sums total;
  for (const Sums& s : per_head) {
    total.diff_squared += s.diff_squared;
    total.exact_squared += s.exact_squared;
    total.max_abs = std::fmax(total.max_abs, s.max_abs);
    total.finite = total.finite && s.finite;
  }
  SoftmaxApproximationError error;
  error.rows = heads * static_cast<std::int64_t>(rows.size());
  if (!total.finite) {
    error.rel_l2 = error.max_abs = std::numeric_limits<double>::infinity();
    return error;
  }
  error.rel_l2 = total.exact_squared > 0 ? std::sqrt(total.diff_squared / total.exact_squared)
                                         : std::sqrt(total.diff_squared);
  error.max_abs = total.max_abs;
  return error;
}

}  // namespace

template <class T>
SoftmaxApproximationError approximation_vs_softmax_decode(const AttentionInputs& inputs, const T* out) {
  const std::int64_t dv = inputs.dim;
  return compare<T>(inputs, {inputs.tokens - 1},
                    [&](std::int64_t bh, std::int64_t) { return out + bh * dv; });
}

template <class T>
SoftmaxApproximationError approximation_vs_softmax_prefill(const AttentionInputs& inputs, const T* out,
                                                           std::int64_t max_rows) {
  const std::int64_t dv = inputs.dim, tokens = inputs.tokens;
  return compare<T>(inputs, rows_to_check(tokens, max_rows),
                    [&](std::int64_t bh, std::int64_t t) { return out + (bh * tokens + t) * dv; });
}

template SoftmaxApproximationError approximation_vs_softmax_decode<float>(const AttentionInputs&, const float*);
template SoftmaxApproximationError approximation_vs_softmax_decode<bf16>(const AttentionInputs&, const bf16*);
template SoftmaxApproximationError approximation_vs_softmax_prefill<float>(const AttentionInputs&, const float*,
                                                                          std::int64_t);
template SoftmaxApproximationError approximation_vs_softmax_prefill<bf16>(const AttentionInputs&, const bf16*,
                                                                         std::int64_t);

}  // namespace arch_bench
