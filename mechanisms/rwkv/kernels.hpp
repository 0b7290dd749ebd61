#pragma once
// What the three RWKV generations' CPU kernels share: the layouts (layout.hpp, shared with the CUDA
// kernels) and the vectorisable scalar maps.
#include <bit>
#include <cstdint>

#include "mechanisms/common/fast_math.hpp"
#include "mechanisms/common/float8.hpp"
#include "mechanisms/common/parallel_policy.hpp"
#include "mechanisms/common/wide_vector.hpp"
#include "mechanisms/rwkv/layout.hpp"

namespace arch_bench {

// Head dims up to this fit the kernels' stack scratch (Mechanism::unsupported rejects wider heads).
inline constexpr std::int64_t kRwkvMaxDim = 256;

// Below this many state elements x tokens a call stays on the calling thread
// (common/parallel_policy.hpp).
inline constexpr std::int64_t kRwkvParallelWork = kParallelStateElements;

// RWKV-6's log-decay log w = -exp(d) (<= 0) and RWKV-7's log w = -e^{-0.5} sigmoid(w_raw), one
// channel at a time and eight (float8: the decode steps' prologue; rwkv7 also a wide_vector's lanes).
inline constexpr float kRwkv7DecayScale = 0.60653065971263342f;  // e^{-0.5}
ARCH_BENCH_KERNEL_HELPERS_BEGIN
#pragma omp declare simd
inline float rwkv6_log_decay(float d) { return -exp_clamped(d); }
inline float8 rwkv6_log_decay(float8 d) { return -exp_clamped(d); }
#pragma omp declare simd
inline float rwkv7_log_decay(float w_raw) { return -kRwkv7DecayScale / (1.0f + exp_clamped(-w_raw)); }
inline float8 rwkv7_log_decay(float8 w_raw) { return -kRwkv7DecayScale / (1.0f + exp_clamped(-w_raw)); }
#if defined(__AVX512F__)
inline wide_vector rwkv7_log_decay(wide_vector w_raw) { return -kRwkv7DecayScale / (1.0f + exp_clamped(-w_raw)); }
#endif

ARCH_BENCH_KERNEL_HELPERS_END
}  // namespace arch_bench
