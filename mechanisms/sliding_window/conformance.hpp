#pragma once
// sliding_window's conformance adapter (mechanisms/sliding_window/conformance.cpp), which its
// Mechanism::conformance() returns.
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& sliding_window_conformance();

}  // namespace arch_bench
