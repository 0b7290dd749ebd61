#pragma once
// AVX2 + FMA kernels of softmax_kv (cpu.cpp enters them only when the CPU has both). They exist
// only in x86 builds (ARCH_BENCH_SOFTMAX_AVX2); elsewhere cpu.cpp runs its portable kernels.
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#define ARCH_BENCH_SOFTMAX_AVX2 1
#endif

#if defined(ARCH_BENCH_SOFTMAX_AVX2)
namespace arch_bench {

// Causal prefill, same contract as softmax_prefill. Any head_dim up to 256.
template <class T>
void softmax_prefill_avx2(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, const T* q,
                          const T* k, const T* v, T* out);

// One decode split: reduces cache rows [begin, end) of one head to partial = {max, sum, acc[dim]}
// (acc unnormalised), for a query already scaled by 1/sqrt(dim). dim must be a multiple of 16.
template <class T>
void softmax_decode_split_avx2(const float* query, const T* keys, const T* values, std::int64_t begin,
                               std::int64_t end, std::int64_t dim, float* partial);

}  // namespace arch_bench
#endif
