#pragma once
// Every CUDA runtime call is checked (docs/design.md, "CUDA backend"). A failure becomes a CellFailure
// that names the call or kernel: cudaErrorMemoryAllocation is `out_of_memory` (the row fails, the
// run goes on), a sticky error (illegal address, launch failure, ...) is `device_lost` (the context
// is unusable: every remaining GPU cell fails with it), anything else is `cuda_error`.
#include <cuda_runtime.h>

#include "core/errors.hpp"

namespace arch_bench {

// Errors after which the CUDA context cannot be used again in this process.
bool is_sticky_cuda_error(cudaError_t status);

// Throws CellFailure when `status` is not cudaSuccess; `what` names the call or kernel.
void cuda_check(cudaError_t status, const char* what);

// After a kernel launch: a bad configuration (grid, block, shared memory) is reported by
// cudaGetLastError at once; errors of the running kernel surface at the next synchronisation.
void check_launch(const char* kernel);

}  // namespace arch_bench

#define ARCH_BENCH_CUDA_CHECK(call) ::arch_bench::cuda_check((call), #call)
