#pragma once
// Whether a usable CUDA device is present. Built from device_probe.cu when nvcc is found, and from
// no_cuda.cpp otherwise, so callers never need #ifdefs.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace arch_bench {

struct CudaProbe {
  bool compiled_with_cuda = false;
  bool usable = false;
  int device_count = 0;
  std::string reason;  // why not usable
  nlohmann::json devices = nlohmann::json::array();  // name, compute capability, SMs, memory, ...
  std::string driver_version;
  std::string runtime_version;
};

CudaProbe probe_cuda();

class Backend;
// The CUDA backend on `device`, for code that must build without CUDA too (the run command, the GPU
// tests). Throws UsageError with the probe's reason when no usable device (or no CUDA build).
std::unique_ptr<Backend> make_cuda_backend(int device = 0);

}  // namespace arch_bench
