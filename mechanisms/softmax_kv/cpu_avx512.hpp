#pragma once
// AVX-512 kernels of softmax_kv (cpu.cpp enters them only when the CPU has AVX-512 F/BW/DQ/VL and
// FMA). Same contracts as the AVX2 set (cpu_avx2.hpp); x86 builds only.
#include <cstdint>

#include "core/bf16.hpp"
#include "mechanisms/softmax_kv/cpu_avx2.hpp"

#if defined(ARCH_BENCH_SOFTMAX_AVX2)
#define ARCH_BENCH_SOFTMAX_AVX512 1
namespace arch_bench {

// Causal prefill, same contract as softmax_prefill (query head bh reads K/V head bh / group; window > 0
// bands the mask). Any head_dim up to 256.
template <class T>
void softmax_prefill_avx512(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, const T* q,
                            const T* k, const T* v, T* out, std::int64_t group, std::int64_t window);

// Causal prefill of bf16 storage on AVX-512 BF16 dot products (cpu_avx512_bf16.cpp): the CPU must
// have avx512bf16 too, and dim must be even.
void softmax_prefill_avx512_bf16_dot(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim,
                                     const bf16* q, const bf16* k, const bf16* v, bf16* out, std::int64_t group,
                                     std::int64_t window);

// One decode split (see softmax_decode_split_avx2). dim must be a multiple of 32.
template <class T>
void softmax_decode_split_avx512(const float* queries, std::int64_t count, const T* keys, const T* values,
                                 std::int64_t begin, std::int64_t end, std::int64_t dim, float* partials,
                                 std::int64_t partial_stride);

}  // namespace arch_bench
#endif
