#include "mechanisms/retnet/cpu.hpp"

#include <algorithm>
#include <cmath>

#include "mechanisms/common/parallel_policy.hpp"
#include "core/bf16.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/common/chunk_matmul.hpp"
#include "mechanisms/common/chunk_state_fold.hpp"
#include "mechanisms/common/state_pass.hpp"

namespace arch_bench {

namespace {
constexpr std::int64_t kMaxDim = kRetNetMaxDim;
constexpr std::int64_t kChunk = kRetNetChunk;

// Decode threading: common/parallel_policy.hpp (a step under kParallelStateElements is a few
// microseconds, and waking a second thread would cost more than it saves).

template <class T>
void decode_one_head(std::int64_t dk, std::int64_t dv, float gamma, const T* q, const T* k, const T* v, float* state,
                     T* out) {
  alignas(64) float query[kMaxDim], key[kMaxDim], value[kMaxDim], result[kMaxDim];
  widen_row(q, dk, query);
  widen_row(k, dk, key);
  widen_row(v, dv, value);
  // One pass over S: each row is decayed, updated and immediately read back for the output.
  decay_update_read(dk, dv, gamma, key, query, value, state, result);
  for (std::int64_t j = 0; j < dv; ++j) out[j] = from_float<T>(result[j]);
}

// One head's chunk buffers. Rows of 64 floats or of the head's width; the largest ones live on the
// thread's stack (about 5 x 64 KiB at dim 256).
struct ChunkBuffers {
  alignas(64) float q[kChunk * kMaxDim];        // [rows, dk], then scaled by gamma^(i+1)
  alignas(64) float keys_t[kMaxDim * kChunk];   // K^T [dk, kChunk], then scaled by gamma^(C-1-j)
  alignas(64) float values[kChunk * kMaxDim];   // [rows, dv]
  alignas(64) float scores[kChunk * kChunk];    // (Q K^T o D) [rows, kChunk]
  alignas(64) float outputs[kChunk * kMaxDim];  // [rows, dv]
  double powers[kChunk + 1];                    // gamma^0 .. gamma^64
  // descending[m] = gamma^(64 - m) rounded to float: gamma^(r - c) for row r is descending[64 - r + c],
  // ascending in c, so the decay loops below are plain vector loops (indexed into `powers` backwards
  // and converted per element, they were a fifth of the chunkwise prefill's time; perf, T = 2048).
  alignas(64) float descending[kChunk + 1];
};

template <class T>
void prefill_one_head(std::int64_t dk, std::int64_t dv, double gamma, std::int64_t tokens, const T* q, const T* k,
                      const T* v, float* state, T* out, ChunkBuffers& w) {
  // Powers in fp64: gamma^64 of a decay near 1 loses digits in a float product chain.
  w.powers[0] = 1.0;
  for (std::int64_t p = 1; p <= kChunk; ++p) w.powers[p] = w.powers[p - 1] * gamma;
  for (std::int64_t m = 0; m <= kChunk; ++m) w.descending[m] = static_cast<float>(w.powers[kChunk - m]);
  for (std::int64_t begin = 0; begin < tokens; begin += kChunk) {
    const std::int64_t rows = std::min(kChunk, tokens - begin);
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* qr = q + (begin + r) * dk;
      const T* kr = k + (begin + r) * dk;
      const T* vr = v + (begin + r) * dv;
      for (std::int64_t i = 0; i < dk; ++i) w.q[r * dk + i] = to_float(qr[i]);
      for (std::int64_t i = 0; i < dk; ++i) w.keys_t[i * kChunk + r] = to_float(kr[i]);
      for (std::int64_t j = 0; j < dv; ++j) w.values[r * dv + j] = to_float(vr[j]);
    }
    // Intra-chunk scores Q K^T (the causal part), then the decay mask D.
    chunk_matmul(rows, rows, dk, w.q, dk, w.keys_t, kChunk, w.scores, kChunk, {.lower_c = true});
    for (std::int64_t r = 0; r < rows; ++r) {
      float* s = w.scores + r * kChunk;
      const float* decay = w.descending + kChunk - r;  // decay[c] = gamma^(r - c)
#pragma omp simd
      for (std::int64_t c = 0; c <= r; ++c) s[c] *= decay[c];
      std::fill(s + r + 1, s + kChunk, 0.0f);  // the lower_a product below reads up to the row block
    }
    // Inter-chunk: the carried state seen from row r is decayed by gamma^(r+1).
    for (std::int64_t r = 0; r < rows; ++r) {
      const float scale = static_cast<float>(w.powers[r + 1]);
#pragma omp simd
      for (std::int64_t i = 0; i < dk; ++i) w.q[r * dk + i] *= scale;
    }
    chunk_matmul(rows, dv, dk, w.q, dk, state, dv, w.outputs, dv);
    chunk_matmul(rows, dv, rows, w.scores, kChunk, w.values, dv, w.outputs, dv, {.accumulate = true, .lower_a = true});
    store_chunk_outputs(out, begin, rows, dv, w.outputs);
    // Fold the chunk into the state: S = gamma^rows S + (diag(gamma^(rows-1-j)) K)^T V.
    const float* to_last = w.descending + kChunk - rows + 1;  // to_last[c] = gamma^(rows - 1 - c)
    fold_chunk_into_state(dk, dv, rows, static_cast<float>(w.powers[rows]), to_last, w.keys_t, kChunk, w.values,
                          state);
  }
}
}  // namespace

template <class T, KernelVariant V>
void retnet_decode_step(const RetNetShape& shape, const double* gamma, const T* q, const T* k, const T* v,
                        float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (retnet_decode_step<T, W>(shape, gamma, q, k, v, state, out)))
  const std::int64_t dk = shape.dk, dv = shape.dv;
#pragma omp parallel for schedule(static) if (shape.batch_heads * dk * dv >= kParallelStateElements)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    decode_one_head(dk, dv, static_cast<float>(gamma[bh % shape.heads]), q + bh * dk, k + bh * dk, v + bh * dv,
                    state + bh * dk * dv, out + bh * dv);
  }
}

template <class T, KernelVariant V>
void retnet_prefill_chunkwise(const RetNetShape& shape, const double* gamma, std::int64_t tokens, const T* q,
                              const T* k, const T* v, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (retnet_prefill_chunkwise<T, W>(shape, gamma, tokens, q, k, v, state, out)))
  const std::int64_t dk = shape.dk, dv = shape.dv;
#pragma omp parallel
  {
    // One set of chunk buffers per thread (on its stack), reused for every head it takes.
    ChunkBuffers buffers;
#pragma omp for schedule(static)
    for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
      prefill_one_head(dk, dv, gamma[bh % shape.heads], tokens, q + bh * tokens * dk, k + bh * tokens * dk,
                       v + bh * tokens * dv, state + bh * dk * dv, out + bh * tokens * dv, buffers);
    }
  }
}

template <class T, KernelVariant V>
void retnet_prefill_recurrent(const RetNetShape& shape, const double* gamma, std::int64_t tokens, const T* q,
                              const T* k, const T* v, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (retnet_prefill_recurrent<T, W>(shape, gamma, tokens, q, k, v, state, out)))
  const std::int64_t dk = shape.dk, dv = shape.dv;
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t row = bh * tokens + t;
      decode_one_head(dk, dv, static_cast<float>(gamma[bh % shape.heads]), q + row * dk, k + row * dk, v + row * dv,
                      state + bh * dk * dv, out + row * dv);
    }
  }
}

#define ARCH_BENCH_RETNET_KERNELS(PREFIX, T, V)                                                                      \
  PREFIX void retnet_decode_step<T, V>(const RetNetShape&, const double*, const T*, const T*, const T*, float*, T*); \
  PREFIX void retnet_prefill_chunkwise<T, V>(const RetNetShape&, const double*, std::int64_t, const T*, const T*,    \
                                            const T*, float*, T*);                                                   \
  PREFIX void retnet_prefill_recurrent<T, V>(const RetNetShape&, const double*, std::int64_t, const T*, const T*,    \
                                            const T*, float*, T*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_RETNET_KERNELS)

}  // namespace arch_bench
