#include "mechanisms/softmax_kv/capacity.hpp"

#include <limits>

#include "mechanisms/common/recall_probe.hpp"
#include "mechanisms/common/recall_reads.hpp"

namespace arch_bench {

// Query q = tau k_i with tau = 32 sqrt(d): after the mechanism's own 1/sqrt(d) the self-match logit is
// 32 and a random unit key's is 32 k_i.k_j, so the self-match dominates the softmax by e^(32 (1 -
// k_i.k_j)). The cache itself is exact (every pair is held): any loss here is the softmax's blur, not
// the state's.
const CapacityProbe& softmax_kv_capacity() {
  static const RecallProbe probe(
      [](const MatrixD& keys, const MatrixD& values) {
        return softmax_window_recall(keys, values, std::numeric_limits<std::int64_t>::max());
      },
      "exact K/V cache read with q = tau k, tau = 32 sqrt(head_dim) (self-match logit 32)");
  return probe;
}

}  // namespace arch_bench
