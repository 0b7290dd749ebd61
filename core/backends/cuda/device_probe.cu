#include "core/backends/cuda/device_probe.hpp"

#include <cuda_runtime.h>

namespace arch_bench {

namespace {
std::string version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}
}  // namespace

CudaProbe probe_cuda() {
  CudaProbe probe;
  probe.compiled_with_cuda = true;
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) probe.runtime_version = version_string(runtime);
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) probe.driver_version = version_string(driver);
  // Without a driver, cudaGetDeviceCount fails (cudaErrorInsufficientDriver / NoDevice) instead
  // of returning 0: any error means "no usable device" (docs/design.md, GPU checks).
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    probe.reason = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(status);
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return probe;
  }
  probe.device_count = count;
  if (count == 0) {
    probe.reason = "no CUDA device found";
    return probe;
  }
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) continue;
    // Free memory needs a context on the device: read only for device 0, the one runs use, so that
    // probing a shared multi-GPU machine does not take memory on every GPU. A failure leaves it
    // unknown (null), not fatal.
    std::size_t free_bytes = 0, total_bytes = 0;
    const bool have_free = device == 0 && cudaSetDevice(device) == cudaSuccess &&
                           cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
    if (device == 0 && !have_free) cudaGetLastError();
    probe.devices.push_back({{"index", device},
                             {"name", prop.name},
                             {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
                             {"multiprocessors", prop.multiProcessorCount},
                             {"memory_bytes", static_cast<std::int64_t>(prop.totalGlobalMem)},
                             {"l2_cache_bytes", prop.l2CacheSize},
                             {"free_memory_bytes", have_free ? nlohmann::json(static_cast<std::int64_t>(free_bytes))
                                                             : nlohmann::json(nullptr)}});
  }
  probe.usable = true;
  return probe;
}

}  // namespace arch_bench
