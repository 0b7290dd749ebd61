#pragma once
// The CUDA limits every mechanism's launch plan (mechanisms/<id>/cuda_plan.cpp) checks a cell
// against, and the rounding-up division the plans size grids with. Plain C++: the plans are
// compiled in every build and tested on the CPU.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace arch_bench {

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
// cudaLaunchKernel's gridDim.x limit.
inline constexpr std::int64_t kCudaMaxGridX = std::numeric_limits<std::int32_t>::max();
// Shared memory a block may use without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline constexpr std::size_t kCudaDefaultSharedBytes = 48 * 1024;

// A block size for a grid that should give every multiprocessor two blocks: `size` halves (rounding
// up) from `largest` down to `least` while blocks_with(size) falls short of that, so a small grid (a
// decode step at batch 1 is 8 heads) spreads over more SMs in smaller blocks. The column recurrence
// sizes its warps and the RWKV scans their threads by it.
template <class BlocksWith>
std::int64_t block_size_filling_the_sms(std::int64_t largest, std::int64_t least, int multiprocessors,
                                        const BlocksWith& blocks_with) {
  const std::int64_t target = 2 * static_cast<std::int64_t>(std::max(multiprocessors, 0));
  std::int64_t size = largest;
  while (size > least && blocks_with(size) < target) size = (size + 1) / 2;
  return size;
}

}  // namespace arch_bench
