#pragma once
#include <memory>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Mamba-2's SSD layer (Dao & Gu 2024): per head a P x N fp32 state with a scalar, input-dependent
// decay, B and C shared by the heads of a group; P = head_dim, N = MechanismOptions::state_size.
std::unique_ptr<Mechanism> make_mamba2();

}  // namespace arch_bench
