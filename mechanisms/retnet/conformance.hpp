#pragma once
// retnet's conformance adapter (mechanisms/retnet/conformance.cpp), which its Mechanism::conformance() returns.
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& retnet_conformance();

}  // namespace arch_bench
