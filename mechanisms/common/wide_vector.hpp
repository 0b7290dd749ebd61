#pragma once
// The widest float vector of the variant a kernel file is compiled as, for loops bound by their
// FMAs over a state row (linear attention's and RWKV-7's passes over S). With AVX-512 it is one zmm
// of 16 floats: Sapphire Rapids issues two FMAs a cycle at either width, so 16 lanes do twice the
// work of float8's 8 per instruction. Elsewhere it is float8 itself (float8.hpp), so a kernel written
// on wide_vector compiles to exactly its float8 form there.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mechanisms/common/float8.hpp"
#include "mechanisms/common/kernel_helpers.hpp"

namespace arch_bench {

// In the variant's namespace (kernel_helpers.hpp), as the alias and its lane count differ by variant.
ARCH_BENCH_KERNEL_HELPERS_BEGIN

#if defined(__AVX512F__)
using wide_vector = float __attribute__((vector_size(64)));
#else
using wide_vector = float8;
#endif
inline constexpr std::int64_t kWideLanes = static_cast<std::int64_t>(sizeof(wide_vector) / sizeof(float));

// Loads and stores of either vector (V = wide_vector or float8), unaligned.
template <class V>
inline V load_lanes(const float* p) {
  if constexpr (std::is_same_v<V, float8>) {
    return load_float8(p);
  } else {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
}

template <class V>
inline void store_lanes(float* p, V v) {
  if constexpr (std::is_same_v<V, float8>) {
    store_float8(p, v);
  } else {
    std::memcpy(p, &v, sizeof(V));
  }
}

// Lane i of the result is v[i] + v[i + 8] (+ ...): a wide vector's partial sums folded into one
// float8, ready for float8's horizontal sums.
inline float8 fold_to_float8(wide_vector v) {
#if defined(__AVX512F__)
  float8 low, high;
  std::memcpy(&low, &v, sizeof(float8));
  std::memcpy(&high, reinterpret_cast<const char*>(&v) + sizeof(float8), sizeof(float8));
  return low + high;
#else
  return v;
#endif
}

ARCH_BENCH_KERNEL_HELPERS_END

}  // namespace arch_bench
