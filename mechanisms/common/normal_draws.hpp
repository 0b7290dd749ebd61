#pragma once
// The N(0, 1) draws every mechanism's inputs start from (q/k/v, Mamba's u/dt/z/B/C, ...), rounded
// through the storage dtype so that the fp64 reference sees exactly what the kernel sees.
#include <cstddef>
#include <random>
#include <vector>

#include "core/dtype.hpp"

namespace arch_bench {

// Replaces `out` with `count` draws of scale * N(0, 1) from `rng`, each rounded through `dtype`.
// Polls for a stop as it goes: gigabytes of draws take tens of seconds (core/stop_request.hpp).
void fill_normal(std::vector<float>& out, std::size_t count, std::mt19937_64& rng, DType dtype, float scale = 1.0f);

}  // namespace arch_bench
