#pragma once
#include <memory>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Causal linear attention with a fixed recurrent state (S, z): the default candidate.
std::unique_ptr<Mechanism> make_linear_attention();

}  // namespace arch_bench
