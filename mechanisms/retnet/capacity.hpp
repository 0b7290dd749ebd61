#pragma once
// retnet's state-capacity probe: the retention state at its neutral decay gamma = 1.
#include "mechanisms/capacity.hpp"

namespace arch_bench {
const CapacityProbe& retnet_capacity();
}  // namespace arch_bench
