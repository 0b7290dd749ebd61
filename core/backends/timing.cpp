#include "core/backends/timing.hpp"

namespace arch_bench {

std::string timing_method_name(TimingMethod method) {
  switch (method) {
    case TimingMethod::steady_clock: return "steady_clock";
    case TimingMethod::cuda_events: return "cuda_events";
    case TimingMethod::cuda_events_batched: return "cuda_events_batched";
    case TimingMethod::cuda_graph: return "cuda_graph";
  }
  return "steady_clock";
}

std::optional<TimingMethod> parse_timing_method(std::string_view name) {
  for (TimingMethod method : {TimingMethod::steady_clock, TimingMethod::cuda_events,
                              TimingMethod::cuda_events_batched, TimingMethod::cuda_graph}) {
    if (name == timing_method_name(method)) return method;
  }
  return std::nullopt;
}

bool is_cuda_timing(TimingMethod method) { return method != TimingMethod::steady_clock; }

}  // namespace arch_bench
