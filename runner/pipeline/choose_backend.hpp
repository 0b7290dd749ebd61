#pragma once
// Which backend a run without a profile measures on: --device cpu, cuda or auto. (A profile names
// its own backend.) Chosen once, before the plan, and recorded with the notes a reader needs.
#include <string>
#include <vector>

#include "core/backends/cuda/device_probe.hpp"
#include "runner/modes/mode.hpp"
#include "runner/pipeline/workload.hpp"

namespace arch_bench {

struct BackendChoice {
  std::string name;  // "cpu" | "cuda"
  std::vector<std::string> notes;
};

// The mode's mechanisms that have no kernels on `backend` in this build (empty: the mode runs there).
std::vector<std::string> mechanisms_without(const Mode& mode, const Workload& workload, const std::string& backend);

// --device cuda needs a usable device (else UsageError, exit 2, with the probe's reason) and CUDA
// kernels for every mechanism of the mode; --device auto takes the GPU when both hold, else the CPU
// with a note saying why. --device cpu probes nothing.
BackendChoice choose_backend(const std::string& device, const Mode& mode, const Workload& workload);
// The same with the probe's answer given (for tests).
BackendChoice choose_backend(const std::string& device, const Mode& mode, const Workload& workload,
                             const CudaProbe& cuda);

}  // namespace arch_bench
