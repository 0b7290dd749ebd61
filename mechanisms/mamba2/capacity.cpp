#include "mechanisms/mamba2/capacity.hpp"

#include <memory>
#include <string>

#include "mechanisms/common/recall_probe.hpp"
#include "mechanisms/common/recall_reads.hpp"

namespace arch_bench {

// Neutral setting: dt = 1, no decay (a_t = 1, the A -> 0 limit), D = 0, no gate. Writing token i
// with B_i = k_i and x_i = v_i gives H = sum_i v_i k_i^T; reading with C = k_j gives
// y_j = sum_i (k_i . k_j) v_i: an additive memory addressed by N-wide keys, exact for orthogonal
// keys up to n = N and blurred beyond. A head's own decay only forgets more, by age.
const CapacityProbe& mamba2_capacity(std::int64_t state_size) {
  return probe_per_key(state_size, [](std::int64_t n) {
    return std::make_unique<RecallProbe>(
        additive_recall,
        "B = k (write), C = k (read), x = v, dt = 1, no decay (A -> 0), D = 0, no gate; keys of width N = " +
            std::to_string(n),
        n);
  });
}

}  // namespace arch_bench
