#pragma once
// What the run command needs of the CUDA backend, callable from code built without CUDA (the
// no-CUDA build's versions, in no_cuda.cpp, throw UsageError with the probe's reason).
#include <nlohmann/json.hpp>

#include "core/backends/backend.hpp"
#include "core/backends/ceilings.hpp"

namespace arch_bench {

// Device copy bandwidth and cuBLAS bf16 GEMM rate of the device behind `backend` (a CudaBackend).
Ceilings measure_cuda_ceilings(Backend& backend);
// The report's hardware.gpu for the device behind `backend`.
nlohmann::json cuda_device_facts(Backend& backend);

}  // namespace arch_bench
