#pragma once
#include <memory>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Sliding-window softmax attention: exact softmax over the last W tokens, a K/V state bounded at W
// tokens per K/V head (Mistral 7B, Gemma 2/3's local layers).
std::unique_ptr<Mechanism> make_sliding_window();

}  // namespace arch_bench
