#pragma once
// Branch-free float selects for loops that must vectorise. gcc 12 turns a float `c ? a : b`
// (and std::max on floats, whose NaN semantics differ from maxps) into a branch in some loops,
// and one branch keeps the whole loop scalar; a select on the bit patterns always if-converts.
#include <bit>
#include <cstdint>
#include "core/kernel_helpers.hpp"

namespace arch_bench {
ARCH_BENCH_KERNEL_HELPERS_BEGIN

// `a` when take_a, else `b`.
inline float bit_select(bool take_a, float a, float b) {
  const std::uint32_t mask = -static_cast<std::uint32_t>(take_a);
  return std::bit_cast<float>((mask & std::bit_cast<std::uint32_t>(a)) | (~mask & std::bit_cast<std::uint32_t>(b)));
}

ARCH_BENCH_KERNEL_HELPERS_END
}  // namespace arch_bench
