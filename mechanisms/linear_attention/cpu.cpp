#include "mechanisms/linear_attention/cpu.hpp"

#include <algorithm>

#include "mechanisms/common/bf16.hpp"

namespace arch_bench {

namespace {
constexpr std::int64_t kMaxDim = 256;  // Mechanism::unsupported() rejects wider heads
constexpr std::int64_t kChunk = kLinearAttentionChunk;

// Below this many state elements a step is a few microseconds, and waking a second thread costs
// more than it saves.
constexpr std::int64_t kParallelStateElements = 1 << 17;

template <class T>
void map_row(FeatureMap map, const T* x, std::int64_t dim, float* phi) {
  for (std::int64_t i = 0; i < dim; ++i) phi[i] = apply_feature_map(map, to_float(x[i]));
}

template <class T>
void decode_one_head(const LinearAttentionShape& shape, const T* q, const T* k, const T* v,
                     float* state, float* normalizer, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv;
  alignas(64) float phi_q[kMaxDim], phi_k[kMaxDim], value[kMaxDim];
  alignas(64) float numerator[kMaxDim] = {};
  map_row(shape.map, q, dk, phi_q);
  map_row(shape.map, k, dk, phi_k);
  for (std::int64_t j = 0; j < dv; ++j) value[j] = to_float(v[j]);
  float denominator = 0.0f;
  // One pass over S: each row is updated and immediately read back for the output.
  for (std::int64_t i = 0; i < dk; ++i) {
    normalizer[i] += phi_k[i];
    denominator += phi_q[i] * normalizer[i];
    float* row = state + i * dv;
    const float a = phi_k[i], b = phi_q[i];
#pragma omp simd
    for (std::int64_t j = 0; j < dv; ++j) {
      row[j] += a * value[j];
      numerator[j] += b * row[j];
    }
  }
  const float inverse = 1.0f / denominator;
  for (std::int64_t j = 0; j < dv; ++j) out[j] = from_float<T>(numerator[j] * inverse);
}

template <class T>
void prefill_one_head(const LinearAttentionShape& shape, std::int64_t tokens, const T* q, const T* k,
                      const T* v, float* state, float* normalizer, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv;
  alignas(64) float phi_q[kChunk][kMaxDim];
  alignas(64) float phi_k[kChunk][kMaxDim];
  alignas(64) float values[kChunk][kMaxDim];
  alignas(64) float numerator[kMaxDim];
  for (std::int64_t begin = 0; begin < tokens; begin += kChunk) {
    const std::int64_t rows = std::min(kChunk, tokens - begin);
    for (std::int64_t r = 0; r < rows; ++r) {
      map_row(shape.map, q + (begin + r) * dk, dk, phi_q[r]);
      map_row(shape.map, k + (begin + r) * dk, dk, phi_k[r]);
      for (std::int64_t j = 0; j < dv; ++j) values[r][j] = to_float(v[(begin + r) * dv + j]);
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      // Inter-chunk: what earlier chunks left in (S, z).
      float denominator = 0.0f;
      std::fill(numerator, numerator + dv, 0.0f);
      for (std::int64_t i = 0; i < dk; ++i) {
        const float a = phi_q[r][i];
        denominator += a * normalizer[i];
        const float* row = state + i * dv;
#pragma omp simd
        for (std::int64_t j = 0; j < dv; ++j) numerator[j] += a * row[j];
      }
      // Intra-chunk: masked (j <= r) phi(q_r).phi(k_j) weights on this chunk's values.
      for (std::int64_t c = 0; c <= r; ++c) {
        float weight = 0.0f;
#pragma omp simd reduction(+ : weight)
        for (std::int64_t i = 0; i < dk; ++i) weight += phi_q[r][i] * phi_k[c][i];
        denominator += weight;
#pragma omp simd
        for (std::int64_t j = 0; j < dv; ++j) numerator[j] += weight * values[c][j];
      }
      const float inverse = 1.0f / denominator;
      T* o = out + (begin + r) * dv;
      for (std::int64_t j = 0; j < dv; ++j) o[j] = from_float<T>(numerator[j] * inverse);
    }
    // Fold the chunk into the carried state: S += phi(K_c)^T V_c, z += sum phi(K_c).
    for (std::int64_t i = 0; i < dk; ++i) {
      float* row = state + i * dv;
      float z = 0.0f;
      for (std::int64_t c = 0; c < rows; ++c) {
        const float a = phi_k[c][i];
        z += a;
#pragma omp simd
        for (std::int64_t j = 0; j < dv; ++j) row[j] += a * values[c][j];
      }
      normalizer[i] += z;
    }
  }
}
}  // namespace

template <class T>
void linear_attention_decode_step(const LinearAttentionShape& shape, const T* q, const T* k,
                                  const T* v, float* state, float* normalizer, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv;
#pragma omp parallel for schedule(static) if (shape.batch_heads * dk * dv >= kParallelStateElements)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    decode_one_head(shape, q + bh * dk, k + bh * dk, v + bh * dv, state + bh * dk * dv,
                    normalizer + bh * dk, out + bh * dv);
  }
}

template <class T>
void linear_attention_prefill_chunkwise(const LinearAttentionShape& shape, std::int64_t tokens,
                                        const T* q, const T* k, const T* v, float* state,
                                        float* normalizer, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv;
#pragma omp parallel for schedule(static)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    prefill_one_head(shape, tokens, q + bh * tokens * dk, k + bh * tokens * dk, v + bh * tokens * dv,
                     state + bh * dk * dv, normalizer + bh * dk, out + bh * tokens * dv);
  }
}

template <class T>
void linear_attention_prefill_recurrent(const LinearAttentionShape& shape, std::int64_t tokens,
                                        const T* q, const T* k, const T* v, float* state,
                                        float* normalizer, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv;
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t row = bh * tokens + t;
      decode_one_head(shape, q + row * dk, k + row * dk, v + row * dv, state + bh * dk * dv,
                      normalizer + bh * dk, out + row * dv);
    }
  }
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                   \
  template void linear_attention_decode_step<T>(const LinearAttentionShape&, const T*, const T*,    \
                                                const T*, float*, float*, T*);                      \
  template void linear_attention_prefill_chunkwise<T>(const LinearAttentionShape&, std::int64_t,    \
                                                      const T*, const T*, const T*, float*, float*, \
                                                      T*);                                          \
  template void linear_attention_prefill_recurrent<T>(const LinearAttentionShape&, std::int64_t,    \
                                                      const T*, const T*, const T*, float*, float*, \
                                                      T*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
