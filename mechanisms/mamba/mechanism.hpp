#pragma once
#include <memory>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Mamba's selective scan (S6, Gu & Dao 2023): a fixed d_inner x N fp32 state per sequence, with
// d_inner = heads * head_dim and N = MechanismOptions::state_size.
std::unique_ptr<Mechanism> make_mamba();

}  // namespace arch_bench
