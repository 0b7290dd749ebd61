#include "mechanisms/common/feature_maps.hpp"

#include <stdexcept>

namespace arch_bench {

std::optional<FeatureMap> parse_feature_map(std::string_view name) {
  if (name == "elu" || name == "elu+1") return FeatureMap::elu_plus_one;
  if (name == "relu" || name == "relu+1") return FeatureMap::relu_plus_one;
  return std::nullopt;
}

std::string feature_map_name(FeatureMap map) {
  return map == FeatureMap::relu_plus_one ? "relu" : "elu";
}

MatrixD positive_feature_map(const MatrixD& x, FeatureMap map) {
  if (x.rows == 0 || x.cols == 0) {
    throw std::invalid_argument("feature map input must be a non-empty [tokens, features] matrix");
  }
  MatrixD features(x.rows, x.cols);
  for (std::size_t i = 0; i < x.data.size(); ++i) features.data[i] = apply_feature_map(map, x.data[i]);
  return features;
}

}  // namespace arch_bench
