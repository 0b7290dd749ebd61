#pragma once
// mamba2's state-capacity probe: a head's state H (P x N) written through B and read through C.
#include <cstdint>

#include "mechanisms/capacity.hpp"

namespace arch_bench {
const CapacityProbe& mamba2_capacity(std::int64_t state_size);
}  // namespace arch_bench
