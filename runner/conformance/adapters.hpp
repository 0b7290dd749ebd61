#pragma once
// The conformance adapter of each mechanism, defined in mechanisms/<id>/conformance.cpp and
// returned by that mechanism's Mechanism::conformance(). A new mechanism adds one line here, its
// conformance.cpp, and the one-line override in its class.
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& softmax_kv_conformance();
const ConformanceAdapter& linear_attention_conformance();
const ConformanceAdapter& performer_conformance();
const ConformanceAdapter& mamba_conformance();
const ConformanceAdapter& retnet_conformance();
const ConformanceAdapter& gated_deltanet_conformance();
const ConformanceAdapter& rwkv4_conformance();
const ConformanceAdapter& rwkv6_conformance();
const ConformanceAdapter& rwkv7_conformance();

}  // namespace arch_bench
