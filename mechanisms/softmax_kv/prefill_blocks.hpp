#pragma once
// The FlashAttention-2 block walk shared by the hand-written CPU prefills (cpu_avx2.cpp,
// cpu_avx512.cpp, cpu_avx512_bf16.cpp): which (head, query block) a thread takes, and, for the sets
// that widen K/V blocks to fp32 (AVX2, AVX-512), the whole walk of one query block over its key
// blocks. Each set brings its microkernels as a policy (`Kernels` below); those carry the ISA's
// target attribute and this file none, so nothing here is ever compiled for an ISA the CPU may lack.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "core/bf16.hpp"

namespace arch_bench::prefill_blocks {

inline constexpr std::int64_t kBlock = 64;    // queries per query block = keys per key block
inline constexpr std::int64_t kMaxDim = 256;  // Mechanism::unsupported() rejects wider heads
inline constexpr std::int64_t kColumns = 16;  // S^T's query columns and O's channels come in 16s

// Calls query_block(offset, q_begin, scratch) for every head (offset = head * tokens * dim) and
// 64-query block, over an OpenMP team with one Scratch per thread. Query block b does b + 1 key
// blocks: handing out the heaviest first keeps the dynamic schedule from ending on one long item.
template <class Scratch, class QueryBlock>
void for_each_query_block(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, QueryBlock&& query_block) {
  const std::int64_t blocks = (tokens + kBlock - 1) / kBlock;
#pragma omp parallel
  {
    const auto scratch = std::make_unique<Scratch>();
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t item = 0; item < batch_heads * blocks; ++item) {
      const std::int64_t head = item % batch_heads;
      const std::int64_t block = blocks - 1 - item / batch_heads;
      query_block(head * tokens * dim, block * kBlock, *scratch);
    }
  }
}

// One thread's blocks for the fp32-widening sets.
struct WideningScratch {
  alignas(64) float qt[kMaxDim * kBlock];      // the query block, transposed and scaled by 1/sqrt(dim)
  alignas(64) float keys[kBlock * kMaxDim];    // one key block in fp32
  alignas(64) float values[kBlock * kMaxDim];  // one value block in fp32, rows padded to a multiple of 16
  alignas(64) float st[kBlock * kBlock];       // S^T, then P^T
  alignas(64) float o[kBlock * kMaxDim];       // unnormalised output rows
  alignas(64) float m[kBlock], l[kBlock], correction[kBlock];
};

// The query block at q_begin of one head, for a set whose Kernels has
//   widen<T>(src, count, dim, width, dst)      rows to fp32, zero-padded to width
//   scores(keys, key_stride, qt, depth, count, cols, st)       S^T = K Q^T
//   softmax(st, count, cols, diagonal, m, l, correction)      S^T -> P^T, running max and sum
//   values(pt, values, value_stride, count, rows, width, correction, o)   O = diag(c) O + P V
template <class Kernels, class T>
void widening_query_block(const T* q, const T* k, const T* v, T* out, std::int64_t tokens, std::int64_t dim,
                          std::int64_t q_begin, WideningScratch& s) {
  const std::int64_t rows = std::min(kBlock, tokens - q_begin);
  const std::int64_t cols = (rows + kColumns - 1) / kColumns * kColumns;
  const std::int64_t width = (dim + kColumns - 1) / kColumns * kColumns;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  for (std::int64_t c = 0; c < dim; ++c) {
    for (std::int64_t i = 0; i < cols; ++i) {
      s.qt[c * kBlock + i] = i < rows ? to_float(q[(q_begin + i) * dim + c]) * scale : 0.0f;
    }
  }
  std::fill_n(s.m, kBlock, -INFINITY);
  std::fill_n(s.l, kBlock, 0.0f);
  std::fill_n(s.o, rows * width, 0.0f);
  for (std::int64_t block = 0; block <= q_begin; block += kBlock) {
    const std::int64_t count = std::min(kBlock, tokens - block);
    const float* keys = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      keys = k + block * dim;  // fp32 keys are read in place: the broadcast operand takes any stride
    } else {
      Kernels::template widen<T>(k + block * dim, count, dim, dim, s.keys);
      keys = s.keys;
    }
    Kernels::template widen<T>(v + block * dim, count, dim, width, s.values);
    Kernels::scores(keys, dim, s.qt, dim, count, cols, s.st);
    Kernels::softmax(s.st, count, cols, block == q_begin, s.m, s.l, s.correction);
    Kernels::values(s.st, s.values, width, count, rows, width, s.correction, s.o);
  }
  for (std::int64_t i = 0; i < rows; ++i) {
    const float inverse = 1.0f / s.l[i];
    T* row = out + (q_begin + i) * dim;
    for (std::int64_t c = 0; c < dim; ++c) row[c] = from_float<T>(s.o[i * width + c] * inverse);
  }
}

// The whole prefill of a widening set.
template <class Kernels, class T>
void widening_prefill(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, const T* q, const T* k,
                      const T* v, T* out) {
  for_each_query_block<WideningScratch>(
      batch_heads, tokens, dim, [&](std::int64_t offset, std::int64_t q_begin, WideningScratch& scratch) {
        widening_query_block<Kernels>(q + offset, k + offset, v + offset, out + offset, tokens, dim, q_begin,
                                      scratch);
      });
}

}  // namespace arch_bench::prefill_blocks
