#pragma once
// The CPU backend: 64-byte aligned host buffers with byte accounting, steady_clock timing and
// cache-line flushes for cold samples.
#include <cstddef>

#include "core/backends/backend.hpp"

namespace arch_bench {

class HostAllocator final : public Allocator {
 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_deallocate(void* pointer, std::size_t bytes) noexcept override;

 private:
  std::size_t next_color_ = 0;  // the offset into its first huge page of the next large buffer
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Allocator& allocator() override { return allocator_; }
  double time_ms(const std::function<void()>& work) override;
  void evict(std::span<const ByteSpan> buffers) override;
  nlohmann::json facts() const override;

 private:
  HostAllocator allocator_;
};

}  // namespace arch_bench
