#pragma once
// mamba's state-capacity probe: the selective state h (d_inner x N) addressed by B (write) and C (read).
#include "mechanisms/capacity.hpp"

namespace arch_bench {
const CapacityProbe& mamba_capacity(std::int64_t state_size);
}  // namespace arch_bench
