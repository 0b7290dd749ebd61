#include "core/backends/cuda/event_timers.hpp"

#include "core/backends/cuda/cuda_check.hpp"

namespace arch_bench {

EventPair::EventPair(cudaStream_t stream) : stream_(stream) {
  ARCH_BENCH_CUDA_CHECK(cudaEventCreate(&start_));
  const cudaError_t status = cudaEventCreate(&stop_);
  if (status != cudaSuccess) {
    cudaEventDestroy(start_);
    cuda_check(status, "cudaEventCreate");
  }
}

EventPair::~EventPair() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

void EventPair::record_start() { ARCH_BENCH_CUDA_CHECK(cudaEventRecord(start_, stream_)); }
void EventPair::record_stop() { ARCH_BENCH_CUDA_CHECK(cudaEventRecord(stop_, stream_)); }

double EventPair::elapsed_ms() {
  // Errors of the kernels between the events surface here (a sticky one as device_lost).
  ARCH_BENCH_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  ARCH_BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms);
}

EventTimer::EventTimer(cudaStream_t stream, const std::function<void()>& work, std::int64_t steps)
    : events_(stream), work_(work), steps_(steps) {}

double EventTimer::sample_ms() {
  events_.record_start();
  for (std::int64_t i = 0; i < steps_; ++i) work_();
  events_.record_stop();
  return events_.elapsed_ms();
}

GraphTimer::GraphTimer(cudaStream_t stream, const std::function<void()>& work, std::int64_t steps)
    : events_(stream), stream_(stream) {
  // Thread-local capture: only this thread's calls are checked, and a forbidden call inside the
  // work (a synchronisation, an allocation) invalidates the capture instead of running.
  ARCH_BENCH_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  try {
    for (std::int64_t i = 0; i < steps; ++i) work();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream_, &broken);
    if (broken != nullptr) cudaGraphDestroy(broken);
    cudaGetLastError();
    throw;
  }
  ARCH_BENCH_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph_));
  const cudaError_t status = cudaGraphInstantiate(&instance_, graph_, 0);
  if (status != cudaSuccess) {
    cudaGraphDestroy(graph_);
    graph_ = nullptr;
    cuda_check(status, "cudaGraphInstantiate");
  }
  // Uploading once keeps the first replay from paying the graph's upload inside a sample. A
  // throwing constructor runs no destructor: release the graph and its instance here.
  const cudaError_t uploaded = cudaGraphUpload(instance_, stream_);
  if (uploaded != cudaSuccess) {
    cudaGraphExecDestroy(instance_);
    instance_ = nullptr;
    cudaGraphDestroy(graph_);
    graph_ = nullptr;
    cuda_check(uploaded, "cudaGraphUpload");
  }
}

GraphTimer::~GraphTimer() {
  if (instance_ != nullptr) cudaGraphExecDestroy(instance_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
}

double GraphTimer::sample_ms() {
  events_.record_start();
  ARCH_BENCH_CUDA_CHECK(cudaGraphLaunch(instance_, stream_));
  events_.record_stop();
  return events_.elapsed_ms();
}

}  // namespace arch_bench
