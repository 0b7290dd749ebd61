#pragma once
// The options Mamba reads (Mechanism::option_specs()): declared once, here.
#include "core/options.hpp"

namespace arch_bench {

// state_size: N, the state size per channel (default 16).
const OptionSpec& mamba_state_size_option();

}  // namespace arch_bench
