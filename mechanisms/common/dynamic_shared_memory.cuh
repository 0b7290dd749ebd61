#pragma once
// A kernel launched with more than 48 KiB of dynamic shared memory must be opted in first
// (cudaFuncAttributeMaxDynamicSharedMemorySize), once per kernel and device, at prepare time: it is
// not a stream operation, so not inside run() or a graph capture.
#include <cuda_runtime.h>

#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/backends/cuda/cuda_check.hpp"

namespace arch_bench {

// Lets `kernel` take `bytes` of dynamic shared memory; checked (the device's opt-in limit is the
// runtime's to enforce, an int overflow is ours). The limit only grows: one kernel instantiation
// serves every cell and conformance run whose plan shares its template, and a later, smaller plan
// must not take back what an earlier one still prepared launches with.
template <class Kernel>
void allow_dynamic_shared_memory(Kernel* kernel, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::invalid_argument("a kernel's dynamic shared memory must fit an int, not " + std::to_string(bytes) +
                                " bytes");
  }
  cudaFuncAttributes now{};
  ARCH_BENCH_CUDA_CHECK(cudaFuncGetAttributes(&now, kernel));
  if (static_cast<int>(bytes) <= now.maxDynamicSharedSizeBytes) return;
  ARCH_BENCH_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

}  // namespace arch_bench
