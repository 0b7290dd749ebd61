#include "mechanisms/gated_deltanet/capacity.hpp"

#include "mechanisms/gated_deltanet/reference.hpp"

namespace arch_bench {

namespace {

// alpha = 1 forgets nothing by age and beta = 1 writes each value fully: each write replaces what the
// state returned for its key, so orthogonal keys are recalled exactly up to n = dk, and past dk the
// newest keys overwrite the directions older ones shared.
class GatedDeltaNetCapacity final : public CapacityProbe {
 public:
  MatrixD recall(const MatrixD& keys, const MatrixD& values) const override {
    return gated_deltanet_recall(keys, values);
  }
  std::string setting() const override {
    return "alpha = 1, beta = 1: S = (I - k_i k_i^T) S + k_i v_i^T per write, read S^T k_i (no dk^-1/2 query scale)";
  }
};

}  // namespace

const CapacityProbe& gated_deltanet_capacity() {
  static const GatedDeltaNetCapacity probe;
  return probe;
}

}  // namespace arch_bench
