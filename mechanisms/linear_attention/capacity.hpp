#pragma once
// linear_attention's state-capacity probe: the additive (S, z) state with its own feature map.
#include "mechanisms/capacity.hpp"
#include "mechanisms/common/feature_maps.hpp"

namespace arch_bench {
const CapacityProbe& linear_attention_capacity(FeatureMap map);
}  // namespace arch_bench
