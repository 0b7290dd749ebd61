#pragma once
#include <memory>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Gated DeltaNet: the gated delta rule on a fixed dk x dv state per head.
std::unique_ptr<Mechanism> make_gated_deltanet();

}  // namespace arch_bench
