#pragma once
// Sizes (elements, bytes) computed from user-given lengths and shapes. A length of 2^62 makes
// 2 * L * d * bytes wrap around to a small or negative number, which then passes every memory
// check; so every size formula multiplies and adds through these, and a result that does not fit
// in int64 throws SizeOverflow instead. build_plan (and the conformance generator) turn that into
// a UsageError naming the options.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace arch_bench {

class SizeOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

// No byte count beyond this can ever be allocated: x86-64 and AArch64 user space spans at most
// 2^47-2^48 bytes of virtual addresses (4-level paging). Larger plans are refused as such, before
// any memory check, so that the remaining arithmetic has 2^15 of headroom.
inline constexpr std::int64_t kMaxAddressableBytes = std::int64_t{1} << 48;

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw SizeOverflow("size " + std::to_string(a) + " x " + std::to_string(b) + " overflows 64 bits");
  }
  return product;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw SizeOverflow("size " + std::to_string(a) + " + " + std::to_string(b) + " overflows 64 bits");
  }
  return sum;
}

// a * b * c * ..., every step checked.
template <class... Rest>
std::int64_t checked_product(std::int64_t first, Rest... rest) {
  std::int64_t product = first;
  ((product = checked_mul(product, static_cast<std::int64_t>(rest))), ...);
  return product;
}

// a + b + c + ..., every step checked.
template <class... Rest>
std::int64_t checked_sum(std::int64_t first, Rest... rest) {
  std::int64_t sum = first;
  ((sum = checked_add(sum, static_cast<std::int64_t>(rest))), ...);
  return sum;
}

// An element count for a std::vector or a buffer: non-negative and within what can be addressed.
inline std::size_t checked_count(std::int64_t count) {
  if (count < 0 || count > kMaxAddressableBytes) {
    throw SizeOverflow("element count " + std::to_string(count) + " is beyond what this machine can address");
  }
  return static_cast<std::size_t>(count);
}

}  // namespace arch_bench
