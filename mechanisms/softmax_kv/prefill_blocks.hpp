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

// Which keys of one key block the queries of one query block see. Key j of the block is visible to
// query i of the query block when 0 <= i + offset - j < window, offset = q_begin - key block start
// (the causal mask: i + offset >= j) and window bounding the distance (sliding_window; a huge value
// for plain causal attention). `masked` is false when every key is visible to every query, so the
// softmax skips the per-lane test.
struct BlockMask {
  bool masked = false;
  std::int64_t offset = 0;
  std::int64_t window = 0;
};

// The mask of the key block at `block` for the query block at q_begin with `rows` queries (window 0:
// no band).
inline BlockMask block_mask(std::int64_t q_begin, std::int64_t rows, std::int64_t block, std::int64_t window) {
  constexpr std::int64_t kUnbounded = std::int64_t{1} << 30;  // beyond any distance the int32 lanes hold
  const std::int64_t reach = window > 0 ? std::min(window, kUnbounded) : kUnbounded;
  const bool crosses_diagonal = block + kBlock > q_begin;                  // some key after some query
  const bool crosses_band = window > 0 && block <= q_begin + rows - 1 - window;  // some key too old
  return {crosses_diagonal || crosses_band, q_begin - block, reach};
}

// The first key block a query block at q_begin reads: with a window, the one holding its first
// query's oldest visible key (blocks wholly before it are outside every query's band).
inline std::int64_t first_key_block(std::int64_t q_begin, std::int64_t window) {
  if (window <= 0 || q_begin - window + 1 <= 0) return 0;
  return (q_begin - window + 1) / kBlock * kBlock;
}

// Where head `head`'s q/out rows and its K/V head's rows start: query head bh reads K/V head bh / group.
struct HeadOffsets {
  std::int64_t query = 0;
  std::int64_t kv = 0;
};

// Calls query_block(offsets, q_begin, scratch) for every head and 64-query block, over an OpenMP team
// with one Scratch per thread. Query block b does b + 1 key blocks: handing out the heaviest first
// keeps the dynamic schedule from ending on one long item.
template <class Scratch, class QueryBlock>
void for_each_query_block(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, std::int64_t group,
                          QueryBlock&& query_block) {
  const std::int64_t blocks = (tokens + kBlock - 1) / kBlock;
#pragma omp parallel
  {
    const auto scratch = std::make_unique<Scratch>();
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t item = 0; item < batch_heads * blocks; ++item) {
      const std::int64_t head = item % batch_heads;
      const std::int64_t block = blocks - 1 - item / batch_heads;
      query_block(HeadOffsets{head * tokens * dim, head / group * tokens * dim}, block * kBlock, *scratch);
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
//   softmax(st, count, cols, mask, m, l, correction)          S^T -> P^T, running max and sum
//   values(pt, values, value_stride, count, rows, width, correction, o)   O = diag(c) O + P V
template <class Kernels, class T>
void widening_query_block(const T* q, const T* k, const T* v, T* out, std::int64_t tokens, std::int64_t dim,
                          std::int64_t q_begin, std::int64_t window, WideningScratch& s) {
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
  for (std::int64_t block = first_key_block(q_begin, window); block <= q_begin; block += kBlock) {
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
    Kernels::softmax(s.st, count, cols, block_mask(q_begin, rows, block, window), s.m, s.l, s.correction);
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
                      const T* v, T* out, std::int64_t group, std::int64_t window) {
  for_each_query_block<WideningScratch>(
      batch_heads, tokens, dim, group, [&](HeadOffsets at, std::int64_t q_begin, WideningScratch& scratch) {
        widening_query_block<Kernels>(q + at.query, k + at.kv, v + at.kv, out + at.query, tokens, dim, q_begin,
                                      window, scratch);
      });
}

}  // namespace arch_bench::prefill_blocks
