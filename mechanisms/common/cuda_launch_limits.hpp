#pragma once
// The CUDA limits every mechanism's launch plan (mechanisms/<id>/cuda_plan.cpp) checks a cell
// against, and the rounding-up division the plans size grids with. Plain C++: the plans are
// compiled in every build and tested on the CPU.
#include <cstddef>
#include <cstdint>
#include <limits>

namespace arch_bench {

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
// cudaLaunchKernel's gridDim.x limit.
inline constexpr std::int64_t kCudaMaxGridX = std::numeric_limits<std::int32_t>::max();
// Shared memory a block may use without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline constexpr std::size_t kCudaDefaultSharedBytes = 48 * 1024;

}  // namespace arch_bench
