#include "core/backends/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/backends/cpu/host_facts.hpp"
#include "core/backends/cuda/cuda_check.hpp"
#include "core/backends/cuda/device_probe.hpp"
#include "core/backends/cuda/event_timers.hpp"

namespace arch_bench {

void* DeviceAllocator::raw_allocate(std::size_t bytes) {
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, bytes == 0 ? 1 : bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw CellFailure("out_of_memory", fmt::format("cudaMalloc of {} bytes failed: {} bytes of {} free on the device",
                                                   bytes, free_bytes, total_bytes));
  }
  cuda_check(status, "cudaMalloc");
  return pointer;
}

void DeviceAllocator::raw_deallocate(void* pointer, std::size_t) noexcept {
  // A destructor cannot throw; after a sticky error cudaFree fails too and the context is gone.
  cudaFree(pointer);
}

CudaBackend::CudaBackend(int device) {
  const CudaProbe probe = probe_cuda();
  if (!probe.usable) throw UsageError(fmt::format("no usable CUDA device ({})", probe.reason));
  if (device < 0 || device >= probe.device_count) {
    throw UsageError(fmt::format("CUDA device {} does not exist ({} found)", device, probe.device_count));
  }
  ARCH_BENCH_CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  ARCH_BENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  device_.index = device;
  device_.name = prop.name;
  device_.major = prop.major;
  device_.minor = prop.minor;
  device_.multiprocessors = prop.multiProcessorCount;
  device_.l2_cache_bytes = prop.l2CacheSize;
  device_.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  device_.max_shared_memory_per_block_optin = static_cast<int>(prop.sharedMemPerBlockOptin);
  ARCH_BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // nvbench flushes L2 by writing a buffer of the L2's size; twice the size also evicts lines
  // that the replacement policy would keep (L2 is not strictly LRU, and H100/H200 split it in two).
  l2_flush_bytes_ = static_cast<std::size_t>(std::max<std::int64_t>(2 * device_.l2_cache_bytes, 8 << 20));
  const cudaError_t status = cudaMalloc(&l2_flush_, l2_flush_bytes_);
  if (status != cudaSuccess) {  // a throwing constructor runs no destructor: release the stream
    l2_flush_ = nullptr;
    cudaStreamDestroy(stream_);
    stream_ = nullptr;
    cuda_check(status, "cudaMalloc (L2 flush buffer)");
  }
}

CudaBackend::~CudaBackend() {
  if (l2_flush_ != nullptr) cudaFree(l2_flush_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

double CudaBackend::time_ms(const std::function<void()>& work) {
  EventPair events(stream_);
  events.record_start();
  work();
  events.record_stop();
  return events.elapsed_ms();
}

std::unique_ptr<SampleTimer> CudaBackend::make_timer(const std::function<void()>& work, const TimingPlan& timing) {
  if (timing.steps_per_sample < 1) {
    throw UsageError(fmt::format("--steps-per-sample must be >= 1 (got {})", timing.steps_per_sample));
  }
  switch (timing.method) {
    case TimingMethod::cuda_events:
      return std::make_unique<EventTimer>(stream_, work, 1);
    case TimingMethod::cuda_events_batched:
      return std::make_unique<EventTimer>(stream_, work, timing.steps_per_sample);
    case TimingMethod::cuda_graph:
      return std::make_unique<GraphTimer>(stream_, work, timing.steps_per_sample);
    case TimingMethod::steady_clock:
      break;
  }
  throw UsageError("the CUDA backend times with CUDA events (cuda_events, cuda_events_batched or cuda_graph), "
                   "not steady_clock");
}

void CudaBackend::synchronize() { ARCH_BENCH_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void CudaBackend::evict(std::span<const ByteSpan>) {
  // Writing the flush buffer replaces every L2 line; waiting for it keeps the flush outside the
  // next sample's events (which are recorded after this returns).
  ARCH_BENCH_CUDA_CHECK(cudaMemsetAsync(l2_flush_, 0, l2_flush_bytes_, stream_));
  ARCH_BENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

std::optional<std::int64_t> CudaBackend::device_free_bytes() {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  return static_cast<std::int64_t>(free_bytes);
}

nlohmann::json CudaBackend::facts() const { return host_facts(); }

CudaBackend& cuda_backend_of(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (cuda == nullptr) {
    throw std::logic_error("a CUDA prepared cell needs the CUDA backend, got the " + backend.name() + " backend");
  }
  return *cuda;
}

std::unique_ptr<Backend> make_cuda_backend(int device) { return std::make_unique<CudaBackend>(device); }

}  // namespace arch_bench
