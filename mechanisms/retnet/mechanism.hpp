#pragma once
#include <memory>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Multi-scale retention (RetNet): a fixed dk x dv state per head with a fixed per-head decay.
std::unique_ptr<Mechanism> make_retnet();

}  // namespace arch_bench
