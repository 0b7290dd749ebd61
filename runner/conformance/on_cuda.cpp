#include "runner/conformance/on_cuda.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "mechanisms/registry.hpp"

#if !ARCH_BENCH_HAVE_CUDA
#include "core/backends/cuda/device_probe.hpp"
#endif

namespace arch_bench {

#if ARCH_BENCH_HAVE_CUDA

namespace {
// The GPU conformance of `mechanism`, declared by its adapter (mechanisms/<id>/cuda_conformance.cpp).
CudaConformanceRun cuda_kernels_of(const Mechanism& mechanism) {
  const ConformanceAdapter* adapter = mechanism.conformance();
  return adapter == nullptr ? nullptr : adapter->cuda_kernels();
}
}  // namespace

std::vector<std::string> cuda_conformance_mechanisms() {
  std::vector<std::string> ids;
  for (const auto& mechanism : all_mechanisms()) {
    if (cuda_kernels_of(*mechanism) != nullptr) ids.push_back(mechanism->info().id);
  }
  return ids;
}

void run_conformance_kernels_on_cuda(const std::string& mechanism, const ConformanceInputs& inputs, DType dtype,
                                     ConformanceOutputs& out, Backend& backend) {
  const Mechanism* found = find_mechanism(mechanism);
  const CudaConformanceRun run = found == nullptr ? nullptr : cuda_kernels_of(*found);
  if (run == nullptr) {
    throw UsageError(fmt::format("--device cuda: {} has no CUDA kernels (those with: {})", mechanism,
                                 fmt::join(cuda_conformance_mechanisms(), ", ")));
  }
  run(inputs, dtype, out, backend);
}

#else  // a build without nvcc

std::vector<std::string> cuda_conformance_mechanisms() { return {}; }

void run_conformance_kernels_on_cuda(const std::string&, const ConformanceInputs&, DType, ConformanceOutputs&,
                                     Backend&) {
  throw UsageError(fmt::format("--device cuda: {}", probe_cuda().reason));
}

#endif

}  // namespace arch_bench
