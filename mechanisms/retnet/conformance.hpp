#pragma once
// retnet's conformance adapter (mechanisms/retnet/conformance.cpp), which its Mechanism::conformance() returns.
#include "core/backends/backend.hpp"
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& retnet_conformance();

// `arch-bench conformance --device cuda`: the CUDA kernels on the same inputs (mechanisms/retnet/cuda_conformance.cpp,
// built with CUDA only), which the adapter's cuda_kernels() returns.
void retnet_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& cuda);

}  // namespace arch_bench
