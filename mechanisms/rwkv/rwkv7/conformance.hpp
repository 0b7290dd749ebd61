#pragma once
// rwkv7's conformance adapter (mechanisms/rwkv/rwkv7/conformance.cpp), which its Mechanism::conformance() returns.
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& rwkv7_conformance();

// `arch-bench conformance --device cuda`: the CUDA kernels on the same inputs (mechanisms/rwkv/cuda_conformance.cpp,
// built with CUDA only), which the adapter's cuda_kernels() returns.
void rwkv7_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& cuda);

}  // namespace arch_bench
