#include "core/backends/cuda/cuda_check.hpp"

#include <string>

namespace arch_bench {

bool is_sticky_cuda_error(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

void cuda_check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  const std::string message =
      std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so the next cell starts clean
    throw CellFailure("out_of_memory", message);
  }
  if (is_sticky_cuda_error(status)) throw CellFailure("device_lost", message, true);
  cudaGetLastError();
  throw CellFailure("cuda_error", message);
}

void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) cuda_check(status, (std::string("launch of kernel ") + kernel).c_str());
}

}  // namespace arch_bench
