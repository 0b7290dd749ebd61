#pragma once
#include "mechanisms/capacity.hpp"

namespace arch_bench {

// The recall probe of a window of `window` tokens: the exact softmax read of softmax_kv's probe
// (q = tau k_i) over only the last min(n, W) stored pairs.
const CapacityProbe& sliding_window_capacity(std::int64_t window);

}  // namespace arch_bench
