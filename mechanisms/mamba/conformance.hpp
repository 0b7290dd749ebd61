#pragma once
// mamba's conformance adapter (mechanisms/mamba/conformance.cpp), which its Mechanism::conformance() returns.
#include <cstdint>
#include <vector>

#include "core/backends/backend.hpp"
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& mamba_conformance();

// x [batch, rows, cols] -> [batch, cols, rows]: the files' [batch, N, length] B and C <-> the kernels'
// token-major [batch, length, N] (swap_axes, conformance_adapter.hpp; CPU and CUDA alike).
inline std::vector<float> swap_last_two(const std::vector<float>& x, std::int64_t batch, std::int64_t rows,
                                        std::int64_t cols) {
  return swap_axes(x, batch, rows, cols);
}

// `arch-bench conformance --device cuda`: the CUDA kernels on the same inputs (mechanisms/mamba/cuda_conformance.cpp,
// built with CUDA only), which the adapter's cuda_kernels() returns.
void mamba_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& cuda);

}  // namespace arch_bench
