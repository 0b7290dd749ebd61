#pragma once
// AVX2 + FMA kernels of softmax_kv (cpu.cpp enters them only when the CPU has both). They exist
// only in x86 builds (ARCH_BENCH_SOFTMAX_AVX2); elsewhere cpu.cpp runs its portable kernels.
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#define ARCH_BENCH_SOFTMAX_AVX2 1
#endif

#if defined(ARCH_BENCH_SOFTMAX_AVX2)
namespace arch_bench {

// Causal prefill, same contract as softmax_prefill (query head bh reads K/V head bh / group; window > 0
// bands the mask). Any head_dim up to 256.
template <class T>
void softmax_prefill_avx2(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, const T* q,
                          const T* k, const T* v, T* out, std::int64_t group, std::int64_t window);

// One decode split: reduces cache rows [begin, end) of one K/V head to partial = {max, sum, acc[dim]}
// (acc unnormalised) for each of `count` (1 .. kDecodeGroupSlice) queries of its group, queries
// [count][dim] already scaled by 1/sqrt(dim); query g's partial at partials + g * partial_stride. Each
// block of rows is scored by every query while it sits in L1, so it is read from memory once. dim must
// be a multiple of 16.
template <class T>
void softmax_decode_split_avx2(const float* queries, std::int64_t count, const T* keys, const T* values,
                               std::int64_t begin, std::int64_t end, std::int64_t dim, float* partials,
                               std::int64_t partial_stride);

}  // namespace arch_bench
#endif
