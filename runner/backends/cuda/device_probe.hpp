#pragma once
// Whether a usable CUDA device is present. Built from device_probe.cu when nvcc is found, and from
// no_cuda.cpp otherwise, so callers never need #ifdefs.
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

}  // namespace arch_bench
