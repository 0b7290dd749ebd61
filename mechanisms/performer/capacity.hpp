#pragma once
// performer's state-capacity probe: the linear-attention state over m random features.
#include "mechanisms/capacity.hpp"
#include "mechanisms/performer/reference.hpp"

namespace arch_bench {
const CapacityProbe& performer_capacity(PerformerFeatures kind, std::int64_t features);
}  // namespace arch_bench
