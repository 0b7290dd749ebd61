#pragma once
// The CUDA backend (docs/design.md, "CUDA backend"): one device, one stream. Every device buffer of a
// cell comes from its DeviceAllocator (current and peak bytes per cell); timing is CUDA events
// around one launch, around N back-to-back launches, or a CUDA graph of N launches replayed; a cold
// sample is an L2 flush (a write of a buffer at least the size of L2, outside the timed region).
// Built only with nvcc; host code that uses it is compiled only in CUDA builds.
#include <cstdint>
#include <memory>
#include <string>

#include "core/backends/backend.hpp"

struct CUstream_st;  // cudaStream_t without the CUDA headers in every includer

namespace arch_bench {

using CudaStream = CUstream_st*;

// cudaMalloc/cudaFree with byte accounting. An allocation that does not fit throws
// CellFailure("out_of_memory") naming the bytes asked for and the bytes free.
class DeviceAllocator final : public Allocator {
 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_deallocate(void* pointer, std::size_t bytes) noexcept override;
};

// What kernels plan their geometry from.
struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;
  int multiprocessors = 0;
  std::int64_t l2_cache_bytes = 0;
  std::int64_t memory_bytes = 0;
  int max_shared_memory_per_block_optin = 0;  // bytes a kernel may opt in to
};

class CudaBackend final : public Backend {
 public:
  // Selects `device`, creates the stream and the L2-flush buffer. Throws UsageError when the
  // device is not usable (the probe's reason).
  explicit CudaBackend(int device = 0);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda"; }
  Allocator& allocator() override { return allocator_; }
  // Events around one call of `work` (which only enqueues on stream()).
  double time_ms(const std::function<void()>& work) override;
  std::unique_ptr<SampleTimer> make_timer(const std::function<void()>& work, const TimingPlan& timing) override;
  void synchronize() override;
  // Cold sample: overwrite the L2-flush buffer (>= the L2 size) on the stream and wait for it;
  // the spans are ignored, L2 is flushed whole.
  void evict(std::span<const ByteSpan> buffers) override;
  std::optional<std::int64_t> device_free_bytes() override;
  nlohmann::json facts() const override;

  CudaStream stream() const { return stream_; }
  const CudaDeviceInfo& device() const { return device_; }

 private:
  CudaDeviceInfo device_;
  CudaStream stream_ = nullptr;
  DeviceAllocator allocator_;
  void* l2_flush_ = nullptr;  // the backend's own, outside every cell's peak
  std::size_t l2_flush_bytes_ = 0;
};

// The CUDA backend behind `backend`; throws std::logic_error when it is another backend (a
// mechanism's CUDA cells are only prepared on the CUDA backend).
CudaBackend& cuda_backend_of(Backend& backend);

}  // namespace arch_bench
