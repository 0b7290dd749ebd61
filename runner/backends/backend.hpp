#pragma once
// The small interface a backend implements: where buffers come from, how one sample is timed,
// how caches are made cold, and what the device is.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/backends/allocator.hpp"

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
  // Makes `buffers` absent from every cache level before a cold sample (outside the timed region).
  virtual void evict(std::span<const ByteSpan> buffers) = 0;
  // Device facts for the report's hardware section.
  virtual nlohmann::json facts() const = 0;
};

}  // namespace arch_bench
