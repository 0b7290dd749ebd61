#include "mechanisms/retnet/capacity.hpp"

#include "mechanisms/retnet/reference.hpp"

namespace arch_bench {

namespace {

// gamma = 1 is the neutral setting: no key is forgotten because of its age, so what is lost is what
// the additive state itself cannot hold (crosstalk between non-orthogonal keys). Any gamma < 1 only
// loses more, and loses it by position rather than by content.
class RetNetCapacity final : public CapacityProbe {
 public:
  MatrixD recall(const MatrixD& keys, const MatrixD& values) const override { return retnet_recall(keys, values, 1.0); }
  std::string setting() const override {
    return "gamma = 1 (no decay): S = sum_i k_i v_i^T, read S^T k_i; a head's own gamma_h < 1 forgets older keys too";
  }
};

}  // namespace

const CapacityProbe& retnet_capacity() {
  static const RetNetCapacity probe;
  return probe;
}

}  // namespace arch_bench
