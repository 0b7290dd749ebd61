#pragma once
// What the AVX-512 softmax_kv kernel files share (cpu_avx512.cpp, cpu_avx512_bf16.cpp): the target
// attribute, the lane and tile sizes, the vectorised exp, and cpu_simd_prefill.hpp (the tile loops).
// Everything here has internal linkage (an anonymous namespace), so no AVX-512 copy of it is ever a
// weak symbol that the linker could hand to code running on another CPU.
#include "mechanisms/softmax_kv/cpu_avx512.hpp"

#if defined(ARCH_BENCH_SOFTMAX_AVX512)
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() (a self-initialised variable) as the
// unused merge source of unmasked operations, and -Wmaybe-uninitialized reports it wherever they
// are inlined (GCC bug 105593, fixed in GCC 13). Clang has no such warning group.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#define ARCH_BENCH_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#define ARCH_BENCH_SIMD_TARGET ARCH_BENCH_AVX512
#include "mechanisms/softmax_kv/cpu_simd_prefill.hpp"  // the tile loops; for cpu_avx512.cpp its microkernels

namespace arch_bench {
namespace {

constexpr int kLanes = 16;
constexpr int kMaxTileVectors = 4;  // 64 columns: 6 rows x 4 zmm = 24 accumulators + 4 operands of 32

// e^x for x <= 0: fast_math.hpp's exp_nonpositive (same reduction, same degree-5 polynomial,
// relative error < 1.8e-7 with FMAs), sixteen lanes at a time; 2^n is applied by vscalefps.
ARCH_BENCH_AVX512 inline __m512 exp_nonpositive16(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-87.0f), x);  // max returns its second operand for NaN: NaN stays
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(8.290282451e-3f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.189806059e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.666763723e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.999914765e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.999997020e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

}  // namespace
}  // namespace arch_bench
#endif  // ARCH_BENCH_SOFTMAX_AVX512
