#pragma once
// gated_deltanet's conformance adapter (mechanisms/gated_deltanet/conformance.cpp), which its Mechanism::conformance() returns.
#include "core/backends/backend.hpp"
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& gated_deltanet_conformance();

// `arch-bench conformance --device cuda`: the CUDA kernels on the same inputs
// (mechanisms/gated_deltanet/cuda_conformance.cpp, built with CUDA only), which the adapter's cuda_kernels() returns.
void gated_deltanet_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out,
                                        Backend& cuda);

}  // namespace arch_bench
