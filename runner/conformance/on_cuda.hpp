#pragma once
// `arch-bench conformance --device cuda`: the mechanism's CUDA kernels on the same .npy inputs. The
// adapter's CPU run gives the layout, the options it filled in and the fp64 reference; this replaces
// the kernel outputs (prefill_out, decode_out token by token from an empty state, the final states
// and their decode-loop copies) by the GPU kernels' own, so the manifest compares the GPU kernels
// against the same reference. Built with nvcc only; without it every call throws the probe's reason.
#include <string>
#include <vector>

#include "core/backends/backend.hpp"
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

// Mechanisms whose kernels exist on the GPU (empty in a build without CUDA).
std::vector<std::string> cuda_conformance_mechanisms();

// Runs the kernels of `mechanism` on the CUDA backend `backend` and overwrites the kernel parts of
// `out` (adapter.run's result on the same inputs, dtype and options). Throws UsageError for a
// mechanism without CUDA kernels or sizes they do not take.
void run_conformance_kernels_on_cuda(const std::string& mechanism, const ConformanceInputs& inputs, DType dtype,
                                     ConformanceOutputs& out, Backend& backend);

}  // namespace arch_bench
