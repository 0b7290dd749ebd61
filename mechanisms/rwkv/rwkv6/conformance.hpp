#pragma once
// rwkv6's conformance adapter (mechanisms/rwkv/rwkv6/conformance.cpp), which its Mechanism::conformance() returns.
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& rwkv6_conformance();

}  // namespace arch_bench
