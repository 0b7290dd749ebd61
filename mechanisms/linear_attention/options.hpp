#pragma once
// The options linear attention reads (Mechanism::option_specs()): declared once, here.
#include "core/options.hpp"

namespace arch_bench {

// feature_map: the positive feature map phi, elu (elu+1, default) or relu (relu+1).
const OptionSpec& linear_attention_feature_map_option();

}  // namespace arch_bench
