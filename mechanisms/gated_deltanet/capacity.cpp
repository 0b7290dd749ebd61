#include "mechanisms/gated_deltanet/capacity.hpp"

#include "mechanisms/common/recall_probe.hpp"
#include "mechanisms/gated_deltanet/reference.hpp"

namespace arch_bench {

// alpha = 1 forgets nothing by age and beta = 1 writes each value fully: each write replaces what the
// state returned for its key, so orthogonal keys are recalled exactly up to n = dk, and past dk the
// newest keys overwrite the directions older ones shared.
const CapacityProbe& gated_deltanet_capacity() {
  static const RecallProbe probe(
      gated_deltanet_recall,
      "alpha = 1, beta = 1: S = (I - k_i k_i^T) S + k_i v_i^T per write, read S^T k_i (no dk^-1/2 query scale)");
  return probe;
}

}  // namespace arch_bench
