#include "core/backends/cuda/device_probe.hpp"

#include "core/backends/backend.hpp"
#include "core/backends/cuda/cuda_entry.hpp"
#include "core/errors.hpp"

namespace arch_bench {

CudaProbe probe_cuda() {
  CudaProbe probe;
  probe.reason = "arch-bench was built without CUDA (nvcc was not found at configure time)";
  return probe;
}

std::unique_ptr<Backend> make_cuda_backend(int) { throw UsageError(probe_cuda().reason); }
Ceilings measure_cuda_ceilings(Backend&) { throw UsageError(probe_cuda().reason); }
nlohmann::json cuda_device_facts(Backend&) { throw UsageError(probe_cuda().reason); }

}  // namespace arch_bench
