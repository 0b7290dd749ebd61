#pragma once
// gated_deltanet's state-capacity probe: the delta rule at its neutral gates alpha = 1, beta = 1.
#include "mechanisms/capacity.hpp"

namespace arch_bench {
const CapacityProbe& gated_deltanet_capacity();
}  // namespace arch_bench
