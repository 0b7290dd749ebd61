#include "mechanisms/linear_attention/capacity.hpp"

namespace arch_bench {

namespace {

// S = sum phi(k_i) v_i^T and z = sum phi(k_i) after all n writes; o_j = phi(k_j)^T S / phi(k_j)^T z.
// The positive features of unit-norm keys are all close to 1, so every read is a near-uniform
// average: the additive state blurs long before n reaches head_dim.
class LinearAttentionCapacity final : public CapacityProbe {
 public:
  explicit LinearAttentionCapacity(FeatureMap map) : map_(map) {}
  MatrixD recall(const MatrixD& keys, const MatrixD& values) const override {
    const std::int64_t n = keys.rows, d = keys.cols, dv = values.cols;
    const MatrixD phi = positive_feature_map(keys, map_);
    MatrixD state(d, dv);
    std::vector<double> z(static_cast<std::size_t>(d), 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t r = 0; r < d; ++r) {
        z[r] += phi(i, r);
        for (std::int64_t c = 0; c < dv; ++c) state(r, c) += phi(i, r) * values(i, c);
      }
    }
    MatrixD out(n, dv);
    for (std::int64_t j = 0; j < n; ++j) {
      double denominator = 0;
      for (std::int64_t r = 0; r < d; ++r) denominator += phi(j, r) * z[r];
      for (std::int64_t r = 0; r < d; ++r) {
        for (std::int64_t c = 0; c < dv; ++c) out(j, c) += phi(j, r) * state(r, c) / denominator;
      }
    }
    return out;
  }
  std::string setting() const override { return "phi = " + feature_map_name(map_) + ", q = k"; }

 private:
  FeatureMap map_;
};

}  // namespace

const CapacityProbe& linear_attention_capacity(FeatureMap map) {
  static const LinearAttentionCapacity elu(FeatureMap::elu_plus_one), relu(FeatureMap::relu_plus_one);
  return map == FeatureMap::relu_plus_one ? static_cast<const CapacityProbe&>(relu) : elu;
}

}  // namespace arch_bench
