#pragma once
// Every buffer a mechanism uses comes from its backend's Allocator, which counts live and peak
// bytes and the number of allocations. That is how a report knows a cell's peak memory and can
// prove that a decode step allocates nothing.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace arch_bench {

class Allocator {
 public:
  Allocator() = default;
  Allocator(const Allocator&) = delete;  // counters describe one owner's buffers
  Allocator& operator=(const Allocator&) = delete;
  virtual ~Allocator() = default;

  void* allocate(std::size_t bytes);
  void deallocate(void* pointer, std::size_t bytes) noexcept;

  std::int64_t current_bytes() const { return current_.load(); }
  std::int64_t peak_bytes() const { return peak_.load(); }
  std::int64_t allocation_count() const { return allocations_.load(); }
  // Starts a new peak window at the bytes live now (called at the start of each cell).
  void reset_peak() { peak_.store(current_.load()); }

 protected:
  virtual void* raw_allocate(std::size_t bytes) = 0;
  virtual void raw_deallocate(void* pointer, std::size_t bytes) noexcept = 0;

 private:
  std::atomic<std::int64_t> current_{0};
  std::atomic<std::int64_t> peak_{0};
  std::atomic<std::int64_t> allocations_{0};
};

// Owning, typed, non-copyable buffer drawn from an Allocator.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Allocator& allocator, std::size_t count)
      : allocator_(&allocator),
        data_(static_cast<T*>(allocator.allocate(count * sizeof(T)))),
        count_(count) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    Buffer(std::move(other)).swap(*this);
    return *this;
  }
  ~Buffer() {
    if (data_ != nullptr) allocator_->deallocate(data_, count_ * sizeof(T));
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::span<T> span() { return {data_, count_}; }
  std::span<const T> span() const { return {data_, count_}; }
  std::span<const std::byte> byte_span() const {
    return {reinterpret_cast<const std::byte*>(data_), bytes()};
  }

 private:
  void swap(Buffer& other) noexcept {
    std::swap(allocator_, other.allocator_);
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
  }
  Allocator* allocator_ = nullptr;
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace arch_bench
