#pragma once
// The GPU's ceilings, measured in the same run as the cells (docs/design.md, "CUDA backend"): the
// device-to-device copy bandwidth (bytes read + written, as nvbench counts it) and the dense bf16
// matrix-product rate through cuBLAS (cublasGemmEx, fp32 accumulation). Rows' fractions of the
// memory bandwidth and of the peak FLOP rate are against these.
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/ceilings.hpp"

namespace arch_bench {

// About a second on an H200; the buffers are the backend's own and freed before the cells run.
Ceilings measure_gpu_ceilings(CudaBackend& backend);
// Facts about the device for the report's hardware.gpu: name, compute capability, SMs, memory,
// L2, driver and runtime versions, clocks, ECC (null where the runtime cannot read them).
nlohmann::json gpu_facts(const CudaBackend& backend);

}  // namespace arch_bench
