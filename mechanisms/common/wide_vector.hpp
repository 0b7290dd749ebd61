#pragma once
// The widest float vector of the variant a kernel file is compiled as, for loops bound by their
// FMAs over a state row (linear attention's and RWKV-7's passes over S). With AVX-512 it is one zmm
// of 16 floats: Sapphire Rapids issues two FMAs a cycle at either width, so 16 lanes do twice the
// work of float8's 8 per instruction. Elsewhere it is float8 itself (float8.hpp), so a kernel written
// on wide_vector compiles to exactly its float8 form there.
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mechanisms/common/bf16.hpp"
#include "mechanisms/common/float8.hpp"
#include "mechanisms/common/kernel_helpers.hpp"

namespace arch_bench {

// In the variant's namespace (kernel_helpers.hpp), as the alias and its lane count differ by variant.
ARCH_BENCH_KERNEL_HELPERS_BEGIN

#if defined(__AVX512F__)
using wide_vector = float __attribute__((vector_size(64)));
using wide_int_vector = std::int32_t __attribute__((vector_size(64)));
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

inline wide_vector load_wide(const float* p) { return load_lanes<wide_vector>(p); }
// 16 bf16 widened in the load, as load_float8 does 8.
inline wide_vector load_wide(const bf16* p) {
#if defined(__AVX512F__)
  // Generic vector code (one vpmovzxwd and a shift): GCC 12's AVX-512 intrinsics trip a false
  // -Wmaybe-uninitialized in every caller (GCC bug 105593).
  using uint16x16 = std::uint16_t __attribute__((vector_size(32)));
  uint16x16 halves;
  std::memcpy(&halves, p, sizeof halves);
  return std::bit_cast<wide_vector>(__builtin_convertvector(halves, wide_int_vector) << 16);
#else
  return load_float8(p);
#endif
}

// float8.hpp's clamps and e^x (x <= 0) on wide_vector: the same lane-wise operations at any width,
// so a lane's result does not depend on which vector computed it.
inline wide_vector clamp_below_wide(wide_vector x, float lo) {
#if defined(__AVX512F__)
  return lanes::clamp_below(x, lo);
#else
  return clamp_below(x, lo);
#endif
}
inline wide_vector clamp_above_wide(wide_vector x, float hi) {
#if defined(__AVX512F__)
  return lanes::clamp_above(x, hi);
#else
  return clamp_above(x, hi);
#endif
}
inline wide_vector exp_nonpositive_wide(wide_vector x) {
#if defined(__AVX512F__)
  return lanes::exp_nonpositive<wide_vector, wide_int_vector>(x);
#else
  return exp_nonpositive(x);
#endif
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
