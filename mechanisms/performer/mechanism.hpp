#pragma once
#include <memory>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Performer (Choromanski et al. 2021): softmax attention approximated by m random features
// (favor+ positive features, or the trig sin/cos features for comparison) on the linear-attention
// recurrence; fixed state (S, z, M) whose size grows with m, not with L.
// Options read: MechanismOptions::features (m, 1..4096) and MechanismOptions::feature_map, which
// for performer names the random-feature map: "favor+" (alias "positive") or "trig" (m even).
// The linear_attention maps ("elu", the field's default, and "relu") are rejected by
// unsupported(), so a performer row never carries a feature_map it did not use.
std::unique_ptr<Mechanism> make_performer();

}  // namespace arch_bench
