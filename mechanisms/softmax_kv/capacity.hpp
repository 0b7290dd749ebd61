#pragma once
// softmax_kv's state-capacity probe: the exact cache, read with a sharpened query. The ceiling every
// fixed state is compared with.
#include "mechanisms/capacity.hpp"

namespace arch_bench {
const CapacityProbe& softmax_kv_capacity();
}  // namespace arch_bench
