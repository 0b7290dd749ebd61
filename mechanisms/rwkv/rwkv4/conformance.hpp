#pragma once
// rwkv4's conformance adapter (mechanisms/rwkv/rwkv4/conformance.cpp), which its Mechanism::conformance() returns.
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& rwkv4_conformance();

}  // namespace arch_bench
