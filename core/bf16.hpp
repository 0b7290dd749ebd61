#pragma once
// bfloat16 storage type for the CPU backend. The CPU has no bf16 arithmetic here, so bf16 is a
// storage format only: values are widened to float for every computation (fp32 accumulate), which
// is also what the CUDA kernels do. Conversion rounds to nearest even, like __float2bfloat16.
#include <bit>
#include <cstdint>
#include <cstring>

#include "core/kernel_helpers.hpp"

namespace arch_bench {

struct bf16 {
  std::uint16_t bits = 0;

  bf16() = default;
  explicit bf16(float value) : bits(round_to_bits(value)) {}
  explicit operator float() const { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

  static std::uint16_t round_to_bits(float value) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(value);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
      return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // keep NaN a (quiet) NaN
    }
    const std::uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>((u + rounding_bias) >> 16);
  }
};
static_assert(sizeof(bf16) == 2);

// Storage <-> float conversions used by every kernel, so that float and bf16 storage share code.
ARCH_BENCH_KERNEL_HELPERS_BEGIN
inline float to_float(float x) { return x; }
inline float to_float(bf16 x) { return static_cast<float>(x); }

template <class T>
T from_float(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    return T(x);
  }
}

// x[0, count) widened to fp32.
template <class T>
void widen_row(const T* x, std::int64_t count, float* out) {
  for (std::int64_t i = 0; i < count; ++i) out[i] = to_float(x[i]);
}

// Rounds a float through the storage type and back: the value a kernel actually sees.
template <class T>
float round_through(float x) {
  return to_float(from_float<T>(x));
}

ARCH_BENCH_KERNEL_HELPERS_END
}  // namespace arch_bench
