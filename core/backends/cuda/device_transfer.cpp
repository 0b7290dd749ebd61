#include "core/backends/cuda/device_transfer.hpp"

#include <cuda_runtime.h>

#include "core/bf16.hpp"
#include "core/backends/cuda/cuda_check.hpp"

namespace arch_bench {

template <class T>
void upload(CudaBackend& backend, const float* host, std::int64_t count, T* device) {
  std::vector<T> staged(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) staged[static_cast<std::size_t>(i)] = from_float<T>(host[i]);
  upload_bytes(backend, staged.data(), staged.size() * sizeof(T), device);
}

void upload_bytes(CudaBackend& backend, const void* host, std::size_t bytes, void* device) {
  if (bytes == 0) return;
  ARCH_BENCH_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, backend.stream()));
  // The host buffer may die when the caller returns: wait for the copy.
  ARCH_BENCH_CUDA_CHECK(cudaStreamSynchronize(backend.stream()));
}

template <class T>
std::vector<float> download(CudaBackend& backend, const T* device, std::int64_t count) {
  std::vector<T> staged(static_cast<std::size_t>(count));
  if (count > 0) {
    ARCH_BENCH_CUDA_CHECK(cudaMemcpyAsync(staged.data(), device, staged.size() * sizeof(T), cudaMemcpyDeviceToHost,
                                          backend.stream()));
    ARCH_BENCH_CUDA_CHECK(cudaStreamSynchronize(backend.stream()));
  }
  std::vector<float> values(staged.size());
  for (std::size_t i = 0; i < staged.size(); ++i) values[i] = to_float(staged[i]);
  return values;
}

void poison(CudaBackend& backend, void* device, std::size_t bytes) {
  ARCH_BENCH_CUDA_CHECK(cudaMemsetAsync(device, 0xFF, bytes, backend.stream()));
  ARCH_BENCH_CUDA_CHECK(cudaStreamSynchronize(backend.stream()));
}

void zero_async(CudaBackend& backend, void* device, std::size_t bytes) {
  ARCH_BENCH_CUDA_CHECK(cudaMemsetAsync(device, 0, bytes, backend.stream()));
}

template void upload<float>(CudaBackend&, const float*, std::int64_t, float*);
template void upload<bf16>(CudaBackend&, const float*, std::int64_t, bf16*);
template std::vector<float> download<float>(CudaBackend&, const float*, std::int64_t);
template std::vector<float> download<bf16>(CudaBackend&, const bf16*, std::int64_t);

}  // namespace arch_bench
