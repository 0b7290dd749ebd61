#include "core/backends/cuda/gpu_ceilings.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/backends/cuda/cublas_library.hpp"
#include "core/backends/cuda/cuda_check.hpp"
#include "core/stop_request.hpp"
#include "core/backends/cuda/cuda_entry.hpp"
#include "core/backends/cuda/event_timers.hpp"

namespace arch_bench {

namespace {

constexpr int kWarmupPasses = 2;
constexpr int kTimedPasses = 5;
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr int kGemmSize = 8192;  // 1.1 TFLOP per product: ~2 ms on an H200, far above launch cost

struct DeviceFree {
  void operator()(void* pointer) const { cudaFree(pointer); }
};
using DeviceMemory = std::unique_ptr<void, DeviceFree>;

DeviceMemory device_alloc(std::size_t bytes) {
  void* pointer = nullptr;
  ARCH_BENCH_CUDA_CHECK(cudaMalloc(&pointer, bytes));
  return DeviceMemory(pointer);
}

void cublas_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw CellFailure("cuda_error", fmt::format("{}: cuBLAS status {}", what, static_cast<int>(status)));
  }
}

// A cuBLAS that cannot be loaded fails the GEMM ceiling, and with it the run's ceilings, by name.
const CublasLibrary& loaded_cublas() {
  const CublasLibrary& library = cublas_library();
  if (!library.usable()) throw CellFailure("cuda_error", library.reason);
  return library;
}

struct CublasHandle {
  const CublasLibrary& library = loaded_cublas();
  cublasHandle_t handle = nullptr;
  CublasHandle() { cublas_check(library.create(&handle), "cublasCreate"); }
  ~CublasHandle() { library.destroy(handle); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
};

// Best of kTimedPasses event-timed calls of `pass`, in milliseconds.
template <class Pass>
double best_ms(cudaStream_t stream, Pass&& pass) {
  for (int i = 0; i < kWarmupPasses; ++i) pass();
  EventPair events(stream);
  double best = 0;
  for (int i = 0; i < kTimedPasses; ++i) {
    events.record_start();
    pass();
    events.record_stop();
    const double ms = events.elapsed_ms();
    if (i == 0 || ms < best) best = ms;
    if (stop_requested()) break;  // one timed pass is a valid reading; the run stops before its first cell
  }
  return best;
}

double copy_bandwidth_gbps(CudaBackend& backend) {
  // Far beyond L2 (50-60 MB on Hopper) so the copy streams from HBM.
  const std::size_t bytes = std::max<std::size_t>(512 * kMiB, 16 * static_cast<std::size_t>(backend.device().l2_cache_bytes));
  DeviceMemory source = device_alloc(bytes), destination = device_alloc(bytes);
  ARCH_BENCH_CUDA_CHECK(cudaMemsetAsync(source.get(), 1, bytes, backend.stream()));
  const double ms = best_ms(backend.stream(), [&] {
    ARCH_BENCH_CUDA_CHECK(cudaMemcpyAsync(destination.get(), source.get(), bytes, cudaMemcpyDeviceToDevice,
                                          backend.stream()));
  });
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

double bf16_gemm_gflops(CudaBackend& backend) {
  const std::size_t elements = static_cast<std::size_t>(kGemmSize) * kGemmSize;
  DeviceMemory a = device_alloc(elements * sizeof(__nv_bfloat16)), b = device_alloc(elements * sizeof(__nv_bfloat16)),
               c = device_alloc(elements * sizeof(__nv_bfloat16));
  // 0x3C00 in every bf16 element is 2^-7: finite products, no denormals, no overflow.
  ARCH_BENCH_CUDA_CHECK(cudaMemsetAsync(a.get(), 0x3C, elements * sizeof(__nv_bfloat16), backend.stream()));
  ARCH_BENCH_CUDA_CHECK(cudaMemsetAsync(b.get(), 0x3C, elements * sizeof(__nv_bfloat16), backend.stream()));
  CublasHandle cublas;
  cublas_check(cublas.library.set_stream(cublas.handle, backend.stream()), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  const double ms = best_ms(backend.stream(), [&] {
    cublas_check(cublas.library.gemm_ex(cublas.handle, CUBLAS_OP_N, CUBLAS_OP_N, kGemmSize, kGemmSize, kGemmSize, &alpha,
                              a.get(), CUDA_R_16BF, kGemmSize, b.get(), CUDA_R_16BF, kGemmSize, &beta, c.get(),
                              CUDA_R_16BF, kGemmSize, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (bf16, fp32 accumulation)");
  });
  const double flops = 2.0 * kGemmSize * static_cast<double>(kGemmSize) * kGemmSize;
  return flops / (ms * 1e-3) / 1e9;
}

std::string cuda_version(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

nlohmann::json attribute_or_null(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return value;
}

}  // namespace

Ceilings measure_gpu_ceilings(CudaBackend& backend) {
  Ceilings ceilings;
  ceilings.device_copy_gbps = copy_bandwidth_gbps(backend);
  ceilings.gemm_bf16_gflops = bf16_gemm_gflops(backend);
  ceilings.memory_read_gbps = *ceilings.device_copy_gbps;
  ceilings.peak_gflops = *ceilings.gemm_bf16_gflops;
  ceilings.threads = 1;
  ceilings.method = fmt::format(
      "GPU {}: device-to-device cudaMemcpyAsync of {} MiB, bytes read + written (best of {}); cublasGemmEx "
      "{}^3 bf16 inputs/outputs, fp32 accumulation (best of {}); CUDA-event timed",
      backend.device().name,
      std::max<std::size_t>(512 * kMiB, 16 * static_cast<std::size_t>(backend.device().l2_cache_bytes)) / kMiB,
      kTimedPasses, kGemmSize, kTimedPasses);
  return ceilings;
}

nlohmann::json gpu_facts(const CudaBackend& backend) {
  const CudaDeviceInfo& d = backend.device();
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  const nlohmann::json clock_khz = attribute_or_null(cudaDevAttrClockRate, d.index);
  const nlohmann::json memory_clock_khz = attribute_or_null(cudaDevAttrMemoryClockRate, d.index);
  return {{"index", d.index},
          {"name", d.name},
          {"compute_capability", fmt::format("{}.{}", d.major, d.minor)},
          {"multiprocessors", d.multiprocessors},
          {"memory_bytes", d.memory_bytes},
          {"l2_cache_bytes", d.l2_cache_bytes},
          {"shared_memory_per_block_optin_bytes", d.max_shared_memory_per_block_optin},
          {"driver_version", driver > 0 ? nlohmann::json(cuda_version(driver)) : nlohmann::json(nullptr)},
          {"runtime_version", runtime > 0 ? nlohmann::json(cuda_version(runtime)) : nlohmann::json(nullptr)},
          {"sm_clock_khz", clock_khz},
          {"memory_clock_khz", memory_clock_khz},
          {"memory_bus_width_bits", attribute_or_null(cudaDevAttrGlobalMemoryBusWidth, d.index)},
          {"ecc_enabled", attribute_or_null(cudaDevAttrEccEnabled, d.index)},
          // Persistence mode and application clocks are NVML facts; the runtime cannot read them.
          {"persistence_mode", nullptr}};
}

}  // namespace arch_bench

namespace arch_bench {

Ceilings measure_cuda_ceilings(Backend& backend) { return measure_gpu_ceilings(cuda_backend_of(backend)); }
nlohmann::json cuda_device_facts(Backend& backend) { return gpu_facts(cuda_backend_of(backend)); }

}  // namespace arch_bench
