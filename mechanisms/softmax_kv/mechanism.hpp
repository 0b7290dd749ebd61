#pragma once
#include <memory>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Softmax attention with an explicit K/V cache: the baseline whose state grows with L.
std::unique_ptr<Mechanism> make_softmax_kv();

}  // namespace arch_bench
