#pragma once
// The option sliding_window reads besides kv_heads (mechanisms/common/kv_heads_option.hpp): declared
// once, here.
#include "core/options.hpp"

namespace arch_bench {

// window: W, the tokens each query attends to (itself and the W - 1 before it), an integer >= 1
// (default 4096, Mistral 7B's). W >= L + 1 is exact causal attention (softmax_kv).
const OptionSpec& window_option();

}  // namespace arch_bench
