#include "mechanisms/gated_deltanet/cpu.hpp"

#include <algorithm>
#include <cmath>

#include "mechanisms/common/parallel_policy.hpp"
#include "core/bf16.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/common/chunk_matmul.hpp"
#include "mechanisms/common/chunk_state_fold.hpp"
#include "mechanisms/common/fast_math.hpp"
#include "mechanisms/common/state_pass.hpp"
#include "mechanisms/common/float8.hpp"
#include "mechanisms/gated_deltanet/reference.hpp"

namespace arch_bench {

namespace {
constexpr std::int64_t kMaxDim = kGatedDeltaNetMaxDim;
constexpr std::int64_t kChunk = kGatedDeltaNetChunk;
constexpr float kNormEps = static_cast<float>(kGatedDeltaNetNormEps);

// Below this many state elements a step is a few microseconds, and waking a second thread costs
// more than it saves.

// x / sqrt(x.x + eps) * scale, widened to fp32. The sum of squares is a vector reduction: summed in
// order, its scalar chain of adds was the largest part of the chunkwise prefill's own time (perf).
// Decode and prefill both normalise here, so they round alike.
template <class T>
void normalise(const T* x, std::int64_t n, float scale, float* out) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < n; ++i) {
    out[i] = to_float(x[i]);
    sum += out[i] * out[i];
  }
  const float factor = scale / std::sqrt(sum + kNormEps);
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) out[i] *= factor;
}

template <class T>
void decode_one_head(std::int64_t dk, std::int64_t dv, const T* q, const T* k, const T* v, float g, float beta,
                     float* state, T* out) {
  alignas(64) float query[kMaxDim], key[kMaxDim], update[kMaxDim];
  alignas(64) float recalled[kMaxDim], result[kMaxDim];
  normalise(q, dk, 1.0f / std::sqrt(static_cast<float>(dk)), query);
  normalise(k, dk, 1.0f, key);
  const float alpha = std::exp(g);
  // Pass 1: S^T k, what the state returns for k before the write.
  read_state(dk, dv, key, state, recalled);
  // alpha (I - beta k k^T) S + beta k v^T = alpha S + k u^T with u = beta (v - alpha S^T k).
#pragma omp simd
  for (std::int64_t j = 0; j < dv; ++j) update[j] = beta * (to_float(v[j]) - alpha * recalled[j]);
  // Pass 2 (S is still in L1/L2 from pass 1): update each row and read it out at once.
  decay_update_read(dk, dv, alpha, key, query, update, state, result);
  for (std::int64_t j = 0; j < dv; ++j) out[j] = from_float<T>(result[j]);
}

// One head's chunk buffers, on the thread's stack (about 7 x 64 KiB at dim 256).
struct ChunkBuffers {
  alignas(64) float q[kChunk * kMaxDim];        // normalised queries [rows, dk], then scaled by exp(G_i)
  alignas(64) float k[kChunk * kMaxDim];        // normalised keys [rows, dk], then -exp(G_i) k_i
  alignas(64) float keys_t[kMaxDim * kChunk];   // K^T [dk, kChunk], then scaled by exp(G_last - G_j)
  alignas(64) float values[kChunk * kMaxDim];   // [rows, dv]
  alignas(64) float w[kChunk * kMaxDim];        // -T diag(exp(G)) K [rows, dk]
  alignas(64) float u[kChunk * kMaxDim];        // T V, then the new values T V - W S_0 [rows, dv]
  alignas(64) float outputs[kChunk * kMaxDim];  // [rows, dv]
  alignas(64) float scores[kChunk * kChunk];    // K K^T, then Q K^T o Gamma [rows, kChunk]
  alignas(64) float t[kChunk * kChunk];         // T [rows, kChunk], lower triangular
  alignas(64) float gap[kChunk * kChunk];       // G_i - G_j (i >= j), <= 0
  double decay[kChunk];                         // G_i, the cumulative log decay inside the chunk
  float beta[kChunk];
};

// T = (I + A)^-1 diag(beta) for A strictly lower [rows, rows] (in `a`, leading dimension kChunk), by
// forward substitution: row i of X = (I + A)^-1 is e_i - sum_{j<i} A_ij X_j. Row j of X is zero past
// column j, so each update runs over the whole kChunk-wide row (adding exact zeros) instead of the
// first j + 1 columns, and the row being built stays in registers (kChunk / 8 vectors) instead of
// going through memory after every update. With a trip count of j + 1, through memory, the solve
// took a fifth of the chunkwise prefill's time (perf, one thread, T = 2048).
static_assert(kChunk % kFloat8Lanes == 0);
void solve_unit_lower(std::int64_t rows, const float* a, const float* beta, float* t) {
  constexpr int kVectors = static_cast<int>(kChunk / kFloat8Lanes);
  for (std::int64_t i = 0; i < rows; ++i) {
    float8 x[kVectors] = {};
    for (std::int64_t j = 0; j < i; ++j) {
      const float coefficient = a[i * kChunk + j];
      const float* xj = t + j * kChunk;
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) x[v] -= coefficient * load_float8(xj + v * kFloat8Lanes);
    }
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) store_float8(t + i * kChunk + v * kFloat8Lanes, x[v]);
    t[i * kChunk + i] = 1.0f;  // the e_i of the row (nothing above added to column i: X_j is zero there)
  }
  for (std::int64_t i = 0; i < rows; ++i) {
#pragma omp simd
    for (std::int64_t c = 0; c <= i; ++c) t[i * kChunk + c] *= beta[c];
  }
}

template <class T>
void prefill_one_head(std::int64_t dk, std::int64_t dv, std::int64_t tokens, const T* q, const T* k, const T* v,
                      const float* g, const float* beta, float* state, T* out, ChunkBuffers& w) {
  const float query_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  for (std::int64_t begin = 0; begin < tokens; begin += kChunk) {
    const std::int64_t rows = std::min(kChunk, tokens - begin);
    double cumulative = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      normalise(q + (begin + r) * dk, dk, query_scale, w.q + r * dk);
      normalise(k + (begin + r) * dk, dk, 1.0f, w.k + r * dk);
      for (std::int64_t i = 0; i < dk; ++i) w.keys_t[i * kChunk + r] = w.k[r * dk + i];
      for (std::int64_t j = 0; j < dv; ++j) w.values[r * dv + j] = to_float(v[(begin + r) * dv + j]);
      cumulative += g[begin + r];
      w.decay[r] = cumulative;
      w.beta[r] = beta[begin + r];
    }
    // Gamma_ij = exp(G_i - G_j) for i >= j (<= 1: the gates only decay), the differences taken in fp64.
    for (std::int64_t r = 0; r < rows; ++r) {
      float* row = w.gap + r * kChunk;
      for (std::int64_t c = 0; c <= r; ++c) row[c] = static_cast<float>(w.decay[r] - w.decay[c]);
#pragma omp simd
      for (std::int64_t c = 0; c <= r; ++c) row[c] = exp_nonpositive(row[c]);
    }

    // A = strictly lower (diag(beta) K K^T o Gamma), then T.
    chunk_matmul(rows, rows, dk, w.k, dk, w.keys_t, kChunk, w.scores, kChunk, {.lower_c = true});
    for (std::int64_t r = 0; r < rows; ++r) {
      float* a = w.scores + r * kChunk;
      const float* gamma = w.gap + r * kChunk;
      const float b = w.beta[r];
#pragma omp simd
      for (std::int64_t c = 0; c < r; ++c) a[c] *= b * gamma[c];
    }
    solve_unit_lower(rows, w.scores, w.beta, w.t);

    // W = T diag(exp(G)) K (negated, so that U = T V + W S_0 is one accumulating product), U = T V.
    for (std::int64_t r = 0; r < rows; ++r) {
      const float scale = -static_cast<float>(std::exp(w.decay[r]));
#pragma omp simd
      for (std::int64_t i = 0; i < dk; ++i) w.k[r * dk + i] *= scale;
    }
    chunk_matmul(rows, dk, rows, w.t, kChunk, w.k, dk, w.w, dk, {.lower_a = true});
    chunk_matmul(rows, dv, rows, w.t, kChunk, w.values, dv, w.u, dv, {.lower_a = true});
    chunk_matmul(rows, dv, dk, w.w, dk, state, dv, w.u, dv, {.accumulate = true});

    // Outputs: the carried state seen through exp(G_i), plus the causal intra-chunk part on U.
    chunk_matmul(rows, rows, dk, w.q, dk, w.keys_t, kChunk, w.scores, kChunk, {.lower_c = true});
    for (std::int64_t r = 0; r < rows; ++r) {
      float* s = w.scores + r * kChunk;
      const float* gamma = w.gap + r * kChunk;
#pragma omp simd
      for (std::int64_t c = 0; c <= r; ++c) s[c] *= gamma[c];
      std::fill(s + r + 1, s + kChunk, 0.0f);  // the lower_a product below reads up to the row block
      const float scale = static_cast<float>(std::exp(w.decay[r]));
#pragma omp simd
      for (std::int64_t i = 0; i < dk; ++i) w.q[r * dk + i] *= scale;
    }
    chunk_matmul(rows, dv, dk, w.q, dk, state, dv, w.outputs, dv);
    chunk_matmul(rows, dv, rows, w.scores, kChunk, w.u, dv, w.outputs, dv, {.accumulate = true, .lower_a = true});
    store_chunk_outputs(out, begin, rows, dv, w.outputs);

    // Fold the chunk into the state: S = exp(G_last) S_0 + (diag(exp(G_last - G_j)) K)^T U.
    const double last = w.decay[rows - 1];
    const float* to_last = w.gap + (rows - 1) * kChunk;  // exp(G_last - G_j)
    fold_chunk_into_state(dk, dv, rows, static_cast<float>(std::exp(last)), to_last, w.keys_t, kChunk, w.u, state);
  }
}
}  // namespace

template <class T, KernelVariant V>
void gated_deltanet_decode_step(const GatedDeltaNetShape& shape, const T* q, const T* k, const T* v, const float* g,
                                const float* beta, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (gated_deltanet_decode_step<T, W>(shape, q, k, v, g, beta, state, out)))
  const std::int64_t dk = shape.dk, dv = shape.dv;
#pragma omp parallel for schedule(static) if (shape.batch_heads * dk * dv >= kParallelStateElements)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    decode_one_head(dk, dv, q + bh * dk, k + bh * dk, v + bh * dv, g[bh], beta[bh], state + bh * dk * dv,
                    out + bh * dv);
  }
}

template <class T, KernelVariant V>
void gated_deltanet_prefill_chunkwise(const GatedDeltaNetShape& shape, std::int64_t tokens, const T* q, const T* k,
                                      const T* v, const float* g, const float* beta, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (gated_deltanet_prefill_chunkwise<T, W>(shape, tokens, q, k, v, g, beta, state, out)))
  const std::int64_t dk = shape.dk, dv = shape.dv;
#pragma omp parallel
  {
    ChunkBuffers buffers;  // one set per thread, reused for every head it takes
#pragma omp for schedule(static)
    for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
      prefill_one_head(dk, dv, tokens, q + bh * tokens * dk, k + bh * tokens * dk, v + bh * tokens * dv,
                       g + bh * tokens, beta + bh * tokens, state + bh * dk * dv, out + bh * tokens * dv, buffers);
    }
  }
}

template <class T, KernelVariant V>
void gated_deltanet_prefill_recurrent(const GatedDeltaNetShape& shape, std::int64_t tokens, const T* q, const T* k,
                                      const T* v, const float* g, const float* beta, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (gated_deltanet_prefill_recurrent<T, W>(shape, tokens, q, k, v, g, beta, state, out)))
  const std::int64_t dk = shape.dk, dv = shape.dv;
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t row = bh * tokens + t;
      decode_one_head(dk, dv, q + row * dk, k + row * dk, v + row * dv, g[row], beta[row], state + bh * dk * dv,
                      out + row * dv);
    }
  }
}

#define ARCH_BENCH_GATED_DELTANET_KERNELS(PREFIX, T, V)                                                               \
  PREFIX void gated_deltanet_decode_step<T, V>(const GatedDeltaNetShape&, const T*, const T*, const T*, const float*, \
                                              const float*, float*, T*);                                              \
  PREFIX void gated_deltanet_prefill_chunkwise<T, V>(const GatedDeltaNetShape&, std::int64_t, const T*, const T*,     \
                                                    const T*, const float*, const float*, float*, T*);                \
  PREFIX void gated_deltanet_prefill_recurrent<T, V>(const GatedDeltaNetShape&, std::int64_t, const T*, const T*,     \
                                                    const T*, const float*, const float*, float*, T*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_GATED_DELTANET_KERNELS)

}  // namespace arch_bench
