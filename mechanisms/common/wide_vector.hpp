#pragma once
// The widest float vector of the variant a kernel file is compiled as, for loops bound by their
// FMAs over a state row (linear attention's and RWKV-7's passes over S). With AVX-512 it is one zmm
// of 16 floats: Sapphire Rapids issues two FMAs a cycle at either width, so 16 lanes do twice the
// work of float8's 8 per instruction. Elsewhere it is float8 itself (float8.hpp), so a kernel written
// on wide_vector compiles to exactly its float8 form there.
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "core/bf16.hpp"
#include "mechanisms/common/float8.hpp"
#include "core/kernel_helpers.hpp"

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

// Loads and stores of either vector (V = wide_vector or float8), unaligned: one vmovups each (a
// memcpy, as load_float8 and store_float8 are).
template <class V>
inline V load_lanes(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

template <class V>
inline void store_lanes(float* p, V v) {
  std::memcpy(p, &v, sizeof(V));
}

inline wide_vector load_wide(const float* p) { return load_lanes<wide_vector>(p); }

#if defined(__AVX512F__)
// 16 bf16 widened in the load, as load_float8 does 8. Generic vector code (one vpmovzxwd and a
// shift): GCC 12's AVX-512 intrinsics trip a false -Wmaybe-uninitialized in every caller (GCC bug
// 105593).
inline wide_vector load_wide(const bf16* p) {
  using uint16x16 = std::uint16_t __attribute__((vector_size(32)));
  uint16x16 halves;
  std::memcpy(&halves, p, sizeof halves);
  return std::bit_cast<wide_vector>(__builtin_convertvector(halves, wide_int_vector) << 16);
}

// float8.hpp's clamps and e^x (x <= 0) for the 16-lane vector, under the same names: the same
// lane-wise code at any width, so a lane's result does not depend on which vector computed it, and
// a kernel templated on the vector calls them alike. (Where wide_vector is float8, float8.hpp's own
// serve.)
inline wide_vector clamp_below(wide_vector x, float lo) { return lanes::clamp_below(x, lo); }
inline wide_vector clamp_above(wide_vector x, float hi) { return lanes::clamp_above(x, hi); }
inline wide_vector exp_nonpositive(wide_vector x) { return lanes::exp_nonpositive<wide_vector, wide_int_vector>(x); }
inline wide_vector exp_clamped(wide_vector x) { return exp_nonpositive(clamp_above(x, 88.0f)); }

// vscalefps, through GCC's builtin under GCC (float8.hpp's clamps say why).
#if defined(__clang__)
inline wide_vector scalef_lanes(wide_vector a, wide_vector b) { return _mm512_scalef_ps(a, b); }
#else
inline wide_vector scalef_lanes(wide_vector a, wide_vector b) {
  return __builtin_ia32_scalefps512_mask(a, b, a, static_cast<__mmask16>(-1), _MM_FROUND_CUR_DIRECTION);
}
#endif

// 2^x for x <= 0: float8.hpp's exp2_nonpositive, the same polynomial on the same reduction, so a
// lane's result is the same bits, in two operations fewer per vector: vscalefps multiplies by 2^n
// where building 2^n in the exponent field took an add, a shift and a multiply. A standalone copy
// of Mamba's state loop, bound by these, ran 13.5 cycles per token and row against 15.9 on two
// float8s (Zen 4, N = 16, one thread, best of 25).
inline wide_vector exp2_nonpositive(wide_vector x) {
  x = clamp_below(x, -126.0f);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const wide_vector n = (x + kRound) - kRound;
  return scalef_lanes(lanes::exp2_reduced(x - n), n);
}

// The 8-lane sums of a vector's lanes: a 16-lane vector's lanes i and i + 8 added (a float8 is
// already 8 lanes: below).
inline float8 fold_to_8_lanes(wide_vector v) {
  return __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
         __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
}
#else
inline wide_vector load_wide(const bf16* p) { return load_float8(p); }
#endif
inline float8 fold_to_8_lanes(float8 v) { return v; }

// Either vector's lanes from bf16 storage, widened (float8.hpp's load or the 16-lane one above), so
// a kernel templated on the vector and the storage type loads with one name, as from fp32.
template <class V>
inline V load_lanes(const bf16* p) {
  if constexpr (sizeof(V) == sizeof(float8)) {
    return load_float8(p);
  } else {
    return load_wide(p);
  }
}

ARCH_BENCH_KERNEL_HELPERS_END

}  // namespace arch_bench
