#include "mechanisms/linear_attention/cpu.hpp"

#include <algorithm>

#include "mechanisms/common/parallel_policy.hpp"
#include "mechanisms/common/prefill_form.hpp"
#include "core/bf16.hpp"
#include "mechanisms/common/chunk_matmul.hpp"
#include "mechanisms/common/state_pass.hpp"
#include "mechanisms/common/fast_math.hpp"
#include "mechanisms/common/float8.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/common/wide_vector.hpp"

namespace arch_bench {

namespace {
constexpr std::int64_t kMaxDim = 256;  // Mechanism::unsupported() rejects wider heads
constexpr std::int64_t kChunk = kLinearAttentionChunk;

// Decode threading: common/parallel_policy.hpp. At 8 heads x 64 x 64 (128 KiB of fp32 S, a pass
// bound by L2 traffic) the serial step takes 3.5-4.4 us; split over two cores each half stays in its
// own core's L2.

// phi over a row, in the float domain, a vector at a time. elu(x) + 1 = max(x, 0) + e^min(x, 0): for
// either sign of x one side of the sum is exact (x + 1 above 0, 0 + e^x below), and a NaN in x stays
// NaN (maxps/minps keep it) where the compare-and-select form made it 1. Three operations around the
// exponential instead of five; the vector form (float8.hpp) is a third cheaper than what gcc makes of
// the scalar one under `omp simd`, and the map was a quarter of the recurrent prefill's time.
// V is float8 or wide_vector (16 lanes with AVX-512: the map was a third of the prefill once the
// state passes went to zmm); lane for lane the same operations at either width, so the same bits.
template <class V>
inline V map_vector(bool relu, V x) {
  const V positive = clamp_below(x, 0.0f);
  return relu ? positive + 1.0f : positive + exp_nonpositive(clamp_above(x, 0.0f));
}

// map_vector's operations on one element (rows not a multiple of 8 wide), -0 and NaN treated alike
// (maxps returns its second operand when the two compare equal or either is NaN). The scalar
// exponential may differ from the vector one in the last bit: gcc contracts it into FMAs its own way.
inline float map_element(bool relu, float x) {
  const float positive = x < 0.0f ? 0.0f : x;
  const float negative = x > 0.0f ? 0.0f : x;
  return relu ? positive + 1.0f : positive + exp_nonpositive(negative);
}

template <class T>
void map_row(FeatureMap map, const T* __restrict x, std::int64_t dim, float* __restrict phi) {
  const bool relu = map == FeatureMap::relu_plus_one;
  std::int64_t i = 0;
  for (; i + kWideLanes <= dim; i += kWideLanes) store_lanes(phi + i, map_vector(relu, load_wide(x + i)));
  if constexpr (kWideLanes > kFloat8Lanes) {
    for (; i + kFloat8Lanes <= dim; i += kFloat8Lanes) store_float8(phi + i, map_vector(relu, load_float8(x + i)));
  }
  for (; i < dim; ++i) phi[i] = map_element(relu, to_float(x[i]));
}

// The state passes run on wide_vector (wide_vector.hpp: a zmm with AVX-512, else float8), their
// columns split by over_state_columns (state_pass.hpp): every step, decode or prefill, takes
// the columns of S the same way, and a lane's operations do not depend on the vector's width, so the
// prefill stays bitwise the decode step.
constexpr std::int64_t kStateLanes = kWideLanes;

// One token's feature-mapped query and key, value and numerator, in fp32.
struct TokenRows {
  float* phi_q;
  float* phi_k;
  float* value;
  float* numerator;
};

// z += phi(k) for `count` (1 or 2) consecutive tokens and each token's 1 / phi(q).z_t. A decode step
// and the recurrent prefill's token pairs both come here, so the prefill's bits are the decode
// steps'. z stays in registers from one token to the next, and each dot product takes two
// accumulators (alternate vectors) where the `omp simd` reduction before took one: the chain the
// pair's outputs wait on is half as long (2-3% of the prefill, 8 heads x 64, T = 2048, Zen 3).
inline void advance_normalizer(std::int64_t dk, int count, const float* const* phi_q, const float* const* phi_k,
                               float* __restrict normalizer, float* inverse) {
  float8 even[2] = {}, odd[2] = {};
  std::int64_t i = 0;
  for (; i + 2 * kFloat8Lanes <= dk; i += 2 * kFloat8Lanes) {
    float8 z_even = load_float8(normalizer + i), z_odd = load_float8(normalizer + i + kFloat8Lanes);
    for (int t = 0; t < count; ++t) {
      z_even += load_float8(phi_k[t] + i);
      z_odd += load_float8(phi_k[t] + i + kFloat8Lanes);
      even[t] += load_float8(phi_q[t] + i) * z_even;
      odd[t] += load_float8(phi_q[t] + i + kFloat8Lanes) * z_odd;
    }
    store_float8(normalizer + i, z_even);
    store_float8(normalizer + i + kFloat8Lanes, z_odd);
  }
  for (; i + kFloat8Lanes <= dk; i += kFloat8Lanes) {
    float8 z = load_float8(normalizer + i);
    for (int t = 0; t < count; ++t) {
      z += load_float8(phi_k[t] + i);
      even[t] += load_float8(phi_q[t] + i) * z;
    }
    store_float8(normalizer + i, z);
  }
  float denominator[2];
  for (int t = 0; t < count; ++t) denominator[t] = sum_lanes(even[t] + odd[t]);
  for (; i < dk; ++i) {
    float z = normalizer[i];
    for (int t = 0; t < count; ++t) {
      z += phi_k[t][i];
      denominator[t] += phi_q[t][i] * z;
    }
    normalizer[i] = z;
  }
  for (int t = 0; t < count; ++t) inverse[t] = 1.0f / denominator[t];
}

// One token's rows in fp32: phi(q), phi(k) and v.
template <class T>
void widen_token(const LinearAttentionShape& shape, const T* q, const T* k, const T* v, const TokenRows& token) {
  map_row(shape.map, q, shape.dk, token.phi_q);
  map_row(shape.map, k, shape.dk, token.phi_k);
  for (std::int64_t j = 0; j < shape.dv; ++j) token.value[j] = to_float(v[j]);
}

// widen_token, then the normalizer z advanced by phi(k) in place; returns 1 / phi(q).z, the output
// scale.
template <class T>
float prepare_token(const LinearAttentionShape& shape, const T* q, const T* k, const T* v, float* normalizer,
                    const TokenRows& token) {
  widen_token(shape, q, k, v, token);
  const float* phi_q = token.phi_q;
  const float* phi_k = token.phi_k;
  float inverse;
  advance_normalizer(shape.dk, 1, &phi_q, &phi_k, normalizer, &inverse);
  return inverse;
}

template <class T>
void write_token(std::int64_t dv, const float* numerator, float inverse, T* out) {
  for (std::int64_t j = 0; j < dv; ++j) out[j] = from_float<T>(numerator[j] * inverse);
}

template <class T>
void decode_one_head(const LinearAttentionShape& shape, const T* q, const T* k, const T* v,
                     float* state, float* normalizer, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv;
  alignas(64) float phi_q[kMaxDim], phi_k[kMaxDim], value[kMaxDim], numerator[kMaxDim];
  const TokenRows token{phi_q, phi_k, value, numerator};
  const float inverse = prepare_token(shape, q, k, v, normalizer, token);
  // One pass over S (state_pass.hpp): each row slice is updated and immediately read back for the
  // output, the value slice and the numerator in registers (the store is the bound; a numerator in
  // memory would double it).
  decay_update_read(dk, dv, kNoDecay, phi_k, phi_q, value, state, numerator);
  write_token(dv, numerator, inverse, out);
}

// Two consecutive tokens of one head, columns [j0, j0 + 8 kVectors): the state slice is loaded once,
// takes token 0's update, gives token 0's numerator, takes token 1's update, gives token 1's
// numerator, and is stored once. The same operations in the same order as two decode steps'
// passes (decay_update_read without a decay), so the results are bitwise those of two decode steps,
// with half the state loads and stores: the single-token pass is bound by its one store per FMA
// pair, this one by the FMAs.
template <class V, int kVectors>
inline void update_columns_two_tokens(std::int64_t dk, std::int64_t dv, std::int64_t j0, const TokenRows& first,
                                      const TokenRows& second, float* __restrict state) {
  constexpr std::int64_t kLanes = sizeof(V) / sizeof(float);
  V v0[kVectors], v1[kVectors], acc0[kVectors], acc1[kVectors];
  for (int c = 0; c < kVectors; ++c) {
    v0[c] = load_lanes<V>(first.value + j0 + c * kLanes);
    v1[c] = load_lanes<V>(second.value + j0 + c * kLanes);
    acc0[c] = V{};
    acc1[c] = V{};
  }
  for (std::int64_t i = 0; i < dk; ++i) {
    float* row = state + i * dv + j0;
    const float a0 = first.phi_k[i], b0 = first.phi_q[i], a1 = second.phi_k[i], b1 = second.phi_q[i];
#pragma GCC unroll 4
    for (int c = 0; c < kVectors; ++c) {
      const V after_first = load_lanes<V>(row + c * kLanes) + a0 * v0[c];
      acc0[c] += b0 * after_first;
      const V after_second = after_first + a1 * v1[c];
      acc1[c] += b1 * after_second;
      store_lanes(row + c * kLanes, after_second);
    }
  }
  for (int c = 0; c < kVectors; ++c) {
    store_lanes(first.numerator + j0 + c * kLanes, acc0[c]);
    store_lanes(second.numerator + j0 + c * kLanes, acc1[c]);
  }
}

// Slices of the paired pass: two state vectors with 16 registers (8 accumulators and values plus
// temporaries), four with AVX-512's 32, which at head_dim 64 is one pass over each state row.
constexpr int kPairSlice = kStateLanes > kFloat8Lanes ? 4 : 2;

// Tokens t and t + 1 of one head (the recurrent prefill's step): decode_one_head twice, fused.
template <class T>
void decode_two_tokens(const LinearAttentionShape& shape, const T* q, const T* k, const T* v, float* state,
                       float* normalizer, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv;
  alignas(64) float buffers[2][4][kMaxDim];
  TokenRows rows[2];
  float inverse[2];
  for (int r = 0; r < 2; ++r) {
    rows[r] = {buffers[r][0], buffers[r][1], buffers[r][2], buffers[r][3]};
    widen_token(shape, q + r * dk, k + r * dk, v + r * dv, rows[r]);
  }
  const float* phi_q[2] = {rows[0].phi_q, rows[1].phi_q};
  const float* phi_k[2] = {rows[0].phi_k, rows[1].phi_k};
  advance_normalizer(dk, 2, phi_q, phi_k, normalizer, inverse);
  const std::int64_t j0 = over_state_columns<kPairSlice>(dv, [&]<class V, int N>(std::int64_t column) {
    update_columns_two_tokens<V, N>(dk, dv, column, rows[0], rows[1], state);
  });
  // Scalar columns are independent of each other: token 0's whole tail, then token 1's, is the order
  // of two decode steps.
  for (int r = 0; r < 2; ++r) {
    decay_update_read_tail(dk, dv, j0, kNoDecay, rows[r].phi_k, rows[r].phi_q, rows[r].value, state,
                           rows[r].numerator);
  }
  for (int r = 0; r < 2; ++r) write_token(dv, rows[r].numerator, inverse[r], out + r * dv);
}

// One thread's chunk buffers (on its stack, about 5 x 64 KiB at dim 256), reused for every head it
// takes, so a prefill allocates nothing.
struct ChunkBuffers {
  alignas(64) float q[kChunk * kMaxDim];        // phi(Q_c) [rows, dk]
  alignas(64) float keys_t[kMaxDim * kChunk];   // phi(K_c)^T [dk, kChunk]
  alignas(64) float values[kChunk * kMaxDim];   // V_c [rows, dv]
  alignas(64) float scores[kChunk * kChunk];    // causal phi(Q_c) phi(K_c)^T [rows, kChunk]
  alignas(64) float outputs[kChunk * kMaxDim];  // numerators [rows, dv]
  alignas(64) float denominators[kChunk];
};

// The chunk form, every product a register-tiled matrix product (chunk_matmul.hpp):
//   scores = tril(phi(Q_c) phi(K_c)^T)
//   numerators = phi(Q_c) S + scores V_c,  denominators = phi(Q_c) z + rowsum(scores)
//   S += phi(K_c)^T V_c,  z += colsum(phi(K_c)^T)
template <class T>
void prefill_one_head(const LinearAttentionShape& shape, std::int64_t tokens, const T* q, const T* k,
                      const T* v, float* state, float* normalizer, T* out, ChunkBuffers& w) {
  const std::int64_t dk = shape.dk, dv = shape.dv;
  for (std::int64_t begin = 0; begin < tokens; begin += kChunk) {
    const std::int64_t rows = std::min(kChunk, tokens - begin);
    alignas(64) float phi_k[kMaxDim];
    for (std::int64_t r = 0; r < rows; ++r) {
      map_row(shape.map, q + (begin + r) * dk, dk, w.q + r * dk);
      map_row(shape.map, k + (begin + r) * dk, dk, phi_k);
      for (std::int64_t i = 0; i < dk; ++i) w.keys_t[i * kChunk + r] = phi_k[i];
      const T* vr = v + (begin + r) * dv;
#pragma omp simd
      for (std::int64_t j = 0; j < dv; ++j) w.values[r * dv + j] = to_float(vr[j]);
    }
    chunk_matmul(rows, rows, dk, w.q, dk, w.keys_t, kChunk, w.scores, kChunk, {.lower_c = true});
    for (std::int64_t r = 0; r < rows; ++r) {
      float* s = w.scores + r * kChunk;
      std::fill(s + r + 1, s + kChunk, 0.0f);  // the mask; the lower_a product reads up to the row block
      float denominator = 0.0f;
      const float* phi_q = w.q + r * dk;
#pragma omp simd reduction(+ : denominator)
      for (std::int64_t i = 0; i < dk; ++i) denominator += phi_q[i] * normalizer[i];
#pragma omp simd reduction(+ : denominator)
      for (std::int64_t c = 0; c <= r; ++c) denominator += s[c];
      w.denominators[r] = denominator;
    }
    chunk_matmul(rows, dv, dk, w.q, dk, state, dv, w.outputs, dv);
    chunk_matmul(rows, dv, rows, w.scores, kChunk, w.values, dv, w.outputs, dv, {.accumulate = true, .lower_a = true});
    for (std::int64_t r = 0; r < rows; ++r) {
      const float inverse = 1.0f / w.denominators[r];
      const float* numerator = w.outputs + r * dv;
      T* o = out + (begin + r) * dv;
#pragma omp simd
      for (std::int64_t j = 0; j < dv; ++j) o[j] = from_float<T>(numerator[j] * inverse);
    }
    // Fold the chunk into the carried state.
    chunk_matmul(dk, dv, rows, w.keys_t, kChunk, w.values, dv, state, dv, {.accumulate = true});
    for (std::int64_t i = 0; i < dk; ++i) {
      const float* key = w.keys_t + i * kChunk;
      float z = 0.0f;
#pragma omp simd reduction(+ : z)
      for (std::int64_t c = 0; c < rows; ++c) z += key[c];
      normalizer[i] += z;
    }
  }
}
// The recurrent prefill streams q, k and v rows while its state stays in L1; fetching the rows
// this many tokens ahead measured 10-15% faster at 8 heads x 64, T = 2048, 2 threads (the hardware
// prefetcher alone leaves the feature map stalled on its loads). Prefetching past the end is
// harmless: a prefetch never faults.
constexpr std::int64_t kPrefetchTokens = 8;

template <class T>
inline void prefetch_token_rows(const T* q, const T* k, const T* v, std::int64_t qk_elements, std::int64_t v_elements) {
  constexpr std::int64_t kLine = 64 / sizeof(T);
  for (std::int64_t i = 0; i < qk_elements; i += kLine) {
    __builtin_prefetch(q + i);
    __builtin_prefetch(k + i);
  }
  for (std::int64_t j = 0; j < v_elements; j += kLine) __builtin_prefetch(v + j);
}

}  // namespace

template <class T, KernelVariant V>
void linear_attention_decode_step(const LinearAttentionShape& shape, const T* q, const T* k,
                                  const T* v, float* state, float* normalizer, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (linear_attention_decode_step<T, W>(shape, q, k, v, state, normalizer, out)))
  const std::int64_t dk = shape.dk, dv = shape.dv;
#pragma omp parallel for schedule(static) if (shape.batch_heads * dk * dv >= kParallelStateElements)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    decode_one_head(shape, q + bh * dk, k + bh * dk, v + bh * dv, state + bh * dk * dv,
                    normalizer + bh * dk, out + bh * dv);
  }
}

template <class T, KernelVariant V>
void linear_attention_prefill_chunkwise(const LinearAttentionShape& shape, std::int64_t tokens,
                                        const T* q, const T* k, const T* v, float* state,
                                        float* normalizer, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (linear_attention_prefill_chunkwise<T, W>(shape, tokens, q, k, v, state, normalizer,
      out)))
  const std::int64_t dk = shape.dk, dv = shape.dv;
#pragma omp parallel
  {
    ChunkBuffers buffers;
#pragma omp for schedule(static)
    for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
      prefill_one_head(shape, tokens, q + bh * tokens * dk, k + bh * tokens * dk, v + bh * tokens * dv,
                       state + bh * dk * dv, normalizer + bh * dk, out + bh * tokens * dv, buffers);
    }
  }
}

template <class T, KernelVariant V>
void linear_attention_prefill_recurrent(const LinearAttentionShape& shape, std::int64_t tokens,
                                        const T* q, const T* k, const T* v, float* state,
                                        float* normalizer, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (linear_attention_prefill_recurrent<T, W>(shape, tokens, q, k, v, state, normalizer,
      out)))
  const std::int64_t dk = shape.dk, dv = shape.dv;
#pragma omp parallel for schedule(static) if (shape.batch_heads * dk * dv * tokens >= kParallelStateElements)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    std::int64_t t = 0;
    for (; t + 2 <= tokens; t += 2) {
      const std::int64_t row = bh * tokens + t;
      prefetch_token_rows(q + (row + kPrefetchTokens) * dk, k + (row + kPrefetchTokens) * dk,
                          v + (row + kPrefetchTokens) * dv, 2 * dk, 2 * dv);
      decode_two_tokens(shape, q + row * dk, k + row * dk, v + row * dv, state + bh * dk * dv,
                        normalizer + bh * dk, out + row * dv);
    }
    for (; t < tokens; ++t) {
      const std::int64_t row = bh * tokens + t;
      decode_one_head(shape, q + row * dk, k + row * dk, v + row * dv, state + bh * dk * dv,
                      normalizer + bh * dk, out + row * dv);
    }
  }
}

template <class T, KernelVariant V>
void linear_attention_prefill(const LinearAttentionShape& shape, std::int64_t tokens, const T* q, const T* k,
                              const T* v, float* state, float* normalizer, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (linear_attention_prefill<T, W>(shape, tokens, q, k, v, state, normalizer, out)))
  if (recurrent_prefill_pays(shape.dk * shape.dv)) {
    linear_attention_prefill_recurrent<T, V>(shape, tokens, q, k, v, state, normalizer, out);
  } else {
    linear_attention_prefill_chunkwise<T, V>(shape, tokens, q, k, v, state, normalizer, out);
  }
}

#define ARCH_BENCH_LINEAR_ATTENTION_KERNELS(PREFIX, T, V)                                                           \
  PREFIX void linear_attention_decode_step<T, V>(const LinearAttentionShape&, const T*, const T*, const T*, float*, \
                                                 float*, T*);                                                       \
  PREFIX void linear_attention_prefill_chunkwise<T, V>(const LinearAttentionShape&, std::int64_t, const T*,         \
                                                       const T*, const T*, float*, float*, T*);                     \
  PREFIX void linear_attention_prefill_recurrent<T, V>(const LinearAttentionShape&, std::int64_t, const T*,         \
                                                       const T*, const T*, float*, float*, T*);                     \
  PREFIX void linear_attention_prefill<T, V>(const LinearAttentionShape&, std::int64_t, const T*, const T*,         \
                                             const T*, float*, float*, T*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_LINEAR_ATTENTION_KERNELS)

}  // namespace arch_bench
