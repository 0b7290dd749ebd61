#include "mechanisms/retnet/capacity.hpp"

#include "mechanisms/common/recall_probe.hpp"
#include "mechanisms/retnet/reference.hpp"

namespace arch_bench {

// gamma = 1 is the neutral setting: no key is forgotten because of its age, so what is lost is what
// the additive state itself cannot hold (crosstalk between non-orthogonal keys). Any gamma < 1 only
// loses more, and loses it by position rather than by content.
const CapacityProbe& retnet_capacity() {
  static const RecallProbe probe(
      [](const MatrixD& keys, const MatrixD& values) { return retnet_recall(keys, values, 1.0); },
      "gamma = 1 (no decay): S = sum_i k_i v_i^T, read S^T k_i; a head's own gamma_h < 1 forgets older keys too");
  return probe;
}

}  // namespace arch_bench
