#pragma once
// How one sample of a cell's timed unit is timed (docs/design.md, "Measurement"). The CPU times one call
// with steady_clock; the CUDA backend records events around one launch (cuda_events), around N
// back-to-back launches (cuda_events_batched, the seed's "CUDA event batched"), or replays N launches
// captured once into a CUDA graph (cuda_graph), so launch overhead can be told apart from the kernel.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace arch_bench {

enum class TimingMethod { steady_clock, cuda_events, cuda_events_batched, cuda_graph };

struct TimingPlan {
  TimingMethod method = TimingMethod::steady_clock;
  // Timed units per sample; a sample's per-step time is its elapsed time / steps_per_sample.
  std::int64_t steps_per_sample = 1;
};

std::string timing_method_name(TimingMethod method);
// Accepts the names written in profiles, reports and on the command line.
std::optional<TimingMethod> parse_timing_method(std::string_view name);
bool is_cuda_timing(TimingMethod method);

// One cell's timer. Built once per cell (a CUDA graph is captured at construction), then asked
// for one sample at a time. Non-copyable: it may own events, a graph or its executable instance.
class SampleTimer {
 public:
  SampleTimer() = default;
  SampleTimer(const SampleTimer&) = delete;
  SampleTimer& operator=(const SampleTimer&) = delete;
  virtual ~SampleTimer() = default;
  // Runs one sample (steps_per_sample timed units) and returns its elapsed milliseconds, complete
  // (a GPU timer synchronises on its stop event).
  virtual double sample_ms() = 0;
};

}  // namespace arch_bench
