#pragma once
// rwkv7's conformance adapter (mechanisms/rwkv/rwkv7/conformance.cpp), which its Mechanism::conformance() returns.
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& rwkv7_conformance();

}  // namespace arch_bench
