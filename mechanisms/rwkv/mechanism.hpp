#pragma once
// The three RWKV generations' time mixing (mechanisms/rwkv/): one folder, three registered
// mechanisms that share their inputs, prepared cells and scalar maps.
#include <memory>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// RWKV-4's WKV operator (seed 002): per-channel state (a, b, p), 3 x heads x head_dim fp32 floats.
std::unique_ptr<Mechanism> make_rwkv4();
// RWKV-6 (Finch): a head_dim x head_dim fp32 matrix state per head, data-dependent decay, bonus u.
std::unique_ptr<Mechanism> make_rwkv6();
// RWKV-7 (Goose): a head_dim x head_dim fp32 matrix state per head, generalised delta rule.
std::unique_ptr<Mechanism> make_rwkv7();

}  // namespace arch_bench
