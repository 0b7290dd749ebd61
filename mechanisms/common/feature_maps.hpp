#pragma once
// Positive feature maps of linear attention (Katharopoulos et al. 2020). One definition, used by
// the fp64 references and the float kernels alike.
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "core/kernel_helpers.hpp"
#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

enum class FeatureMap { elu_plus_one, relu_plus_one };

std::optional<FeatureMap> parse_feature_map(std::string_view name);  // "elu" | "relu"
std::string feature_map_name(FeatureMap map);

// phi(x) > 0 for every finite x, so the normaliser phi(q).z is strictly positive.
ARCH_BENCH_KERNEL_HELPERS_BEGIN
template <class Real>
inline Real apply_feature_map(FeatureMap map, Real x) {
  if (map == FeatureMap::relu_plus_one) return (x > Real(0) ? x : Real(0)) + Real(1);
  return x > Real(0) ? x + Real(1) : std::exp(x);  // elu(x) + 1
}
ARCH_BENCH_KERNEL_HELPERS_END

// The seed's positive_feature_map contract: same shape, every element > 0, empty input rejected
// with std::invalid_argument.
MatrixD positive_feature_map(const MatrixD& x, FeatureMap map = FeatureMap::elu_plus_one);

}  // namespace arch_bench
