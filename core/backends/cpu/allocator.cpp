#include "core/backends/allocator.hpp"

#include <new>

namespace arch_bench {

void* Allocator::allocate(std::size_t bytes) {
  void* pointer = raw_allocate(bytes);
  if (pointer == nullptr && bytes != 0) throw std::bad_alloc();
  allocations_.fetch_add(1);
  const std::int64_t now = current_.fetch_add(static_cast<std::int64_t>(bytes)) +
                           static_cast<std::int64_t>(bytes);
  std::int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return pointer;
}

void Allocator::deallocate(void* pointer, std::size_t bytes) noexcept {
  raw_deallocate(pointer, bytes);
  current_.fetch_sub(static_cast<std::int64_t>(bytes));
}

}  // namespace arch_bench
