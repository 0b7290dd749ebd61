#pragma once
// mamba2's conformance adapter (mechanisms/mamba2/conformance.cpp), which its Mechanism::conformance() returns.
#include <cstdint>
#include <vector>

#include "core/backends/backend.hpp"
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& mamba2_conformance();

// The files' token-major [batch, length, heads, ...] <-> the kernels' head-major [batch, heads,
// length, ...] (swap_axes, conformance_adapter.hpp); CPU and CUDA alike.
inline std::vector<float> mamba2_swap_middle(const std::vector<float>& x, std::int64_t outer, std::int64_t a,
                                             std::int64_t b, std::int64_t width) {
  return swap_axes(x, outer, a, b, width);
}
// S [rows, N, P] (the kernels') -> H [rows, P, N] (the files').
inline std::vector<float> mamba2_states_to_files(const std::vector<float>& s, std::int64_t rows, std::int64_t n,
                                                 std::int64_t p) {
  return swap_axes(s, rows, n, p);
}

// `arch-bench conformance --device cuda`: the CUDA kernel on the same inputs
// (mechanisms/mamba2/cuda_conformance.cpp, built with CUDA only), which the adapter's cuda_kernels()
// returns.
void mamba2_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& cuda);

}  // namespace arch_bench
