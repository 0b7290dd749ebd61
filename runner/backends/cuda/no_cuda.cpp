#include "runner/backends/cuda/device_probe.hpp"

namespace arch_bench {

CudaProbe probe_cuda() {
  CudaProbe probe;
  probe.reason = "arch-bench was built without CUDA (nvcc was not found at configure time)";
  return probe;
}

}  // namespace arch_bench
