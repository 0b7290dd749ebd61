#pragma once
// gated_deltanet's conformance adapter (mechanisms/gated_deltanet/conformance.cpp), which its Mechanism::conformance() returns.
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& gated_deltanet_conformance();

}  // namespace arch_bench
