#pragma once
// Moving a cell's inputs to the device and its outputs back, outside the timed region. Storage
// conversion happens on the host (float -> T rounds exactly like the CPU kernels' storage), so the
// fp64 reference and the GPU kernel see the same values. All copies go through the backend's stream
// and wait for it; every call is checked.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/backends/cuda/cuda_backend.hpp"

namespace arch_bench {

// Writes `count` values (already representable in T) to `device`.
template <class T>
void upload(CudaBackend& backend, const float* host, std::int64_t count, T* device);
// Copies `count` raw elements of T from the host.
void upload_bytes(CudaBackend& backend, const void* host, std::size_t bytes, void* device);
// Reads `count` elements of T back, widened to float.
template <class T>
std::vector<float> download(CudaBackend& backend, const T* device, std::int64_t count);
// Fills `bytes` with 0xFF: NaN in fp32 and bf16, so an element a kernel never wrote fails the
// accuracy check instead of passing with a stale value.
void poison(CudaBackend& backend, void* device, std::size_t bytes);
// Zeroes `bytes` on the backend's stream without waiting (capturable inside a timed unit).
void zero_async(CudaBackend& backend, void* device, std::size_t bytes);

}  // namespace arch_bench
