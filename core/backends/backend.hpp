#pragma once
// The small interface a backend implements: where buffers come from, how one sample is timed,
// how caches are made cold, and what the device is.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backends/allocator.hpp"
#include "core/backends/timing.hpp"

namespace arch_bench {

using ByteSpan = std::span<const std::byte>;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu" or "cuda"
  virtual Allocator& allocator() = 0;
  // Times one call of `work` in milliseconds, including whatever synchronisation makes the
  // result complete (CPU: none; CUDA: events).
  virtual double time_ms(const std::function<void()>& work) = 0;
  // The timer of one cell under `timing`. The default times `steps_per_sample` calls with
  // time_ms(), which is all steady_clock needs; the CUDA backend overrides it for events and
  // graphs. Throws UsageError for a method the backend cannot do.
  virtual std::unique_ptr<SampleTimer> make_timer(const std::function<void()>& work, const TimingPlan& timing);
  // Waits until everything enqueued (warmup launches) has finished; a no-op on the CPU.
  virtual void synchronize() {}
  // Makes `buffers` absent from every cache level before a cold sample (outside the timed region).
  virtual void evict(std::span<const ByteSpan> buffers) = 0;
  // Free device memory in bytes (cudaMemGetInfo), recorded before and after each cell; nullopt
  // where the backend has no device memory of its own.
  virtual std::optional<std::int64_t> device_free_bytes() { return std::nullopt; }
  // Device facts for the report's hardware section.
  virtual nlohmann::json facts() const = 0;
};

}  // namespace arch_bench
