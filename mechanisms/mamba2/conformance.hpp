#pragma once
// mamba2's conformance adapter (mechanisms/mamba2/conformance.cpp), which its Mechanism::conformance() returns.
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& mamba2_conformance();

}  // namespace arch_bench
