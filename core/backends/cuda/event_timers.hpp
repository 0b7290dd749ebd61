#pragma once
// CUDA-event timers (docs/design.md, "Measurement"). RAII owners of events, graphs and graph instances;
// non-copyable. The work they time only enqueues on the stream; the timers synchronise on their
// stop event, so a returned sample is complete.
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>

#include "core/backends/timing.hpp"

namespace arch_bench {

// A start/stop event pair on one stream.
class EventPair {
 public:
  explicit EventPair(cudaStream_t stream);
  ~EventPair();
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  void record_start();
  void record_stop();
  // Waits for the stop event; milliseconds between the two events (~0.5 us resolution).
  double elapsed_ms();

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Events around `steps` back-to-back calls of work: cuda_events (1) and cuda_events_batched (N).
class EventTimer final : public SampleTimer {
 public:
  EventTimer(cudaStream_t stream, const std::function<void()>& work, std::int64_t steps);
  double sample_ms() override;

 private:
  EventPair events_;
  const std::function<void()>& work_;
  std::int64_t steps_;
};

// `steps` calls of work captured once into a CUDA graph, replayed between events each sample: the
// kernels' time without per-launch CPU overhead. A work that synchronises or allocates cannot be
// captured: construction fails with a CellFailure naming the capture error.
class GraphTimer final : public SampleTimer {
 public:
  GraphTimer(cudaStream_t stream, const std::function<void()>& work, std::int64_t steps);
  ~GraphTimer() override;
  double sample_ms() override;

 private:
  EventPair events_;
  cudaStream_t stream_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t instance_ = nullptr;
};

}  // namespace arch_bench
