#include "runner/pipeline/choose_backend.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

std::vector<std::string> mechanisms_without(const Mode& mode, const Workload& workload, const std::string& backend) {
  std::vector<std::string> missing;
  for (const Arm& arm : mode.arms(workload)) {
    const Mechanism* mechanism = find_mechanism(arm.mechanism);
    const bool has = mechanism != nullptr && std::ranges::find(mechanism->info().backends, backend) !=
                                                 mechanism->info().backends.end();
    if (!has && std::ranges::find(missing, arm.mechanism) == missing.end()) missing.push_back(arm.mechanism);
  }
  return missing;
}

BackendChoice choose_backend(const std::string& device, const Mode& mode, const Workload& workload) {
  if (device == "cpu") return {"cpu", {}};
  return choose_backend(device, mode, workload, probe_cuda());
}

BackendChoice choose_backend(const std::string& device, const Mode& mode, const Workload& workload,
                             const CudaProbe& cuda) {
  if (device == "cpu") return {"cpu", {}};
  if (device == "cuda") {
    if (!cuda.usable) {
      throw UsageError(fmt::format("--device cuda: no usable CUDA device ({}); use --device cpu or auto",
                                   cuda.reason));
    }
    if (const std::vector<std::string> missing = mechanisms_without(mode, workload, "cuda"); !missing.empty()) {
      throw UsageError(fmt::format("--device cuda: mode {} needs {} which have no CUDA kernels in this build; use "
                                   "--device cpu",
                                   mode.id(), fmt::join(missing, ", ")));
    }
    return {"cuda", {}};
  }
  if (!cuda.usable) {
    return {"cpu", {fmt::format("--device auto: no usable CUDA device ({}); measured on the CPU backend", cuda.reason)}};
  }
  if (const std::vector<std::string> missing = mechanisms_without(mode, workload, "cuda"); !missing.empty()) {
    return {"cpu", {fmt::format("--device auto: a CUDA device is usable but {} of mode {} have no CUDA kernels; "
                                "measured on the CPU backend",
                                fmt::join(missing, ", "), mode.id())}};
  }
  return {"cuda", {fmt::format("--device auto: measured on CUDA device 0 ({})",
                               cuda.devices.empty() ? std::string("?") : cuda.devices[0].value("name", std::string("?")))}};
}

}  // namespace arch_bench
