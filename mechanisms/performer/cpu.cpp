#include "mechanisms/performer/cpu.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "mechanisms/common/bf16.hpp"
#include "mechanisms/common/fast_math.hpp"

namespace arch_bench {

namespace {
constexpr std::int64_t kChunk = kPerformerChunk;
constexpr std::int64_t kMaxFeatures = kPerformerMaxFeatures;
constexpr std::int64_t kMaxDim = kPerformerMaxDim;
constexpr float kEps = static_cast<float>(kPerformerEpsilon);

// Below this many state elements a step is a few microseconds, and waking a second thread costs
// more than it saves (as in linear_attention).
constexpr std::int64_t kParallelStateElements = 1 << 17;

bool nonpositive(float denominator) { return !(denominator > 0.0f) || !std::isfinite(denominator); }

// |x~|^2 / 2 = |x|^2 / (2 sqrt(dk)).
template <class T>
float half_scaled_norm(const T* x, std::int64_t dk) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t c = 0; c < dk; ++c) sum += to_float(x[c]) * to_float(x[c]);
  return sum * (0.5f / std::sqrt(static_cast<float>(dk)));
}

// proj[r][i] = w_i . x~_r for `count` tokens (x rows of dk, proj rows of `n`), W packed [dk, n].
// Four tokens per pass over W: W (64 KiB at m=256, dk=64) streams from L2 once per four tokens,
// while the four accumulator rows stay in L1.
template <class T>
void project_rows(const T* x, std::int64_t count, std::int64_t dk, const float* packed,
                  std::int64_t n, float* proj) {
  constexpr std::int64_t kBlock = 4;
  for (std::int64_t r0 = 0; r0 < count; r0 += kBlock) {
    const std::int64_t rows = std::min(kBlock, count - r0);
    std::fill(proj + r0 * n, proj + (r0 + rows) * n, 0.0f);
    for (std::int64_t d = 0; d < dk; ++d) {
      const float* w = packed + d * n;
      for (std::int64_t r = 0; r < rows; ++r) {
        const float xd = to_float(x[(r0 + r) * dk + d]);
        float* p = proj + (r0 + r) * n;
#pragma omp simd
        for (std::int64_t i = 0; i < n; ++i) p[i] += xd * w[i];
      }
    }
  }
}

// favor+: f_i = m^(-1/2) (exp(p_i - max p) + eps). For a query this is the whole stabilised
// feature (the |q~|^2/2 term and the max are per-token constants); returns max p.
float favor_features(const float* proj, std::int64_t m, float* f) {
  float top = -std::numeric_limits<float>::infinity();
  for (std::int64_t i = 0; i < m; ++i) top = std::max(top, proj[i]);
  const float ratio = 1.0f / std::sqrt(static_cast<float>(m));
#pragma omp simd
  for (std::int64_t i = 0; i < m; ++i) f[i] = ratio * (exp_nonpositive(proj[i] - top) + kEps);
  return top;
}

// trig: f = sqrt(2/m) [sin(p), cos(p)] over the m/2 projections. sin and cos share one
// Cody-Waite reduction by pi/2 and the Cephes sinf/cosf polynomials on [-pi/4, pi/4] (|error| <
// 1e-7 for |p| up to ~1e4): libm's sinf/cosf are scalar calls that block vectorisation.
void trig_features(const float* proj, std::int64_t m, float* f) {
  const std::int64_t half = m / 2;
  const float ratio = std::sqrt(2.0f / static_cast<float>(m));
  float* sines = f;
  float* cosines = f + half;
#pragma omp simd
  for (std::int64_t i = 0; i < half; ++i) {
    const float x = proj[i];
    const float n = __builtin_roundevenf(x * 0.636619772367581343f);  // x / (pi/2)
    const float r = ((x - n * 1.5703125f) - n * 4.837512969970703125e-4f) - n * 7.54978995489188216e-8f;
    const float z = r * r;
    const float s = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
    const float c = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z -
                    0.5f * z + 1.0f;
    const std::int32_t quadrant = static_cast<std::int32_t>(n) & 3;
    const float sine = (quadrant & 1) ? c : s;
    const float cosine = (quadrant & 1) ? s : c;
    sines[i] = ratio * ((quadrant & 2) ? -sine : sine);
    cosines[i] = ratio * (((quadrant + 1) & 2) ? -cosine : cosine);
  }
}

// Query features (their log-scale is dropped: it cancels between numerator and denominator).
void query_features(const PerformerShape& shape, const float* proj, float* f) {
  if (shape.kind == PerformerFeatures::trig) {
    trig_features(proj, shape.features, f);
  } else {
    favor_features(proj, shape.features, f);
  }
}

// Key features and the key's log-scale (favor+: max_i w_i.k~ - |k~|^2/2; trig: |k~|^2/2).
template <class T>
float key_features(const PerformerShape& shape, const float* proj, const T* k, float* f) {
  const float half_norm = half_scaled_norm(k, shape.dk);
  if (shape.kind == PerformerFeatures::trig) {
    trig_features(proj, shape.features, f);
    return half_norm;
  }
  return favor_features(proj, shape.features, f) - half_norm;
}

// One token of one head: fold (k, v) into (S, z, M), then out = phi(q).S / phi(q).z.
template <class T>
bool decode_one_head(const PerformerShape& shape, const float* projection, const T* q, const T* k,
                     const T* v, float* state, float* normalizer, float* running_max, T* out) {
  const std::int64_t m = shape.features, dv = shape.dv, n = shape.projection_rows();
  alignas(64) float proj[kMaxFeatures];
  alignas(64) float phi_q[kMaxFeatures], phi_k[kMaxFeatures];
  alignas(64) float value[kMaxDim];
  alignas(64) float numerator[kMaxDim] = {};
  project_rows(q, 1, shape.dk, projection, n, proj);
  query_features(shape, proj, phi_q);
  project_rows(k, 1, shape.dk, projection, n, proj);
  const float key_scale = key_features(shape, proj, k, phi_k);
  for (std::int64_t j = 0; j < dv; ++j) value[j] = to_float(v[j]);
  // Running max: a key above M rescales the state by exp(M_old - M_new) <= 1 (0 on the first key,
  // when M = -inf); the key itself enters with weight exp(c_k - M_new) <= 1.
  const float new_max = std::max(*running_max, key_scale);
  const float rescale = exp_nonpositive(*running_max - new_max);
  const float weight = exp_nonpositive(key_scale - new_max);
  *running_max = new_max;
  float denominator = 0.0f;
  // One pass over S: each row is rescaled, updated and immediately read back for the output.
  for (std::int64_t i = 0; i < m; ++i) {
    const float a = weight * phi_k[i], b = phi_q[i];
    normalizer[i] = normalizer[i] * rescale + a;
    denominator += b * normalizer[i];
    float* row = state + i * dv;
#pragma omp simd
    for (std::int64_t j = 0; j < dv; ++j) {
      row[j] = row[j] * rescale + a * value[j];
      numerator[j] += b * row[j];
    }
  }
  const float inverse = 1.0f / denominator;
  for (std::int64_t j = 0; j < dv; ++j) out[j] = from_float<T>(numerator[j] * inverse);
  return nonpositive(denominator);
}

// Per-thread workspace of the chunkwise prefill, carved from one slice.
struct ChunkWorkspace {
  float* proj;        // [kChunk, n]
  float* phi_q;       // [kChunk, m]
  float* phi_k;       // [kChunk, m]
  float* values;      // [kChunk, dv]
  float* numerator;   // [kChunk, dv]
  float* denominator; // [kChunk]
  float* key_scale;   // [kChunk] the keys' log-scales c_j
  float* row_max;     // [kChunk] running max M at each row's token

  static std::int64_t floats(const PerformerShape& shape) {
    return kChunk * (shape.projection_rows() + 2 * shape.features + 2 * shape.dv + 3);
  }
  ChunkWorkspace(const PerformerShape& shape, float* base) {
    proj = base;
    phi_q = proj + kChunk * shape.projection_rows();
    phi_k = phi_q + kChunk * shape.features;
    values = phi_k + kChunk * shape.features;
    numerator = values + kChunk * shape.dv;
    denominator = numerator + kChunk * shape.dv;
    key_scale = denominator + kChunk;
    row_max = key_scale + kChunk;
  }
};

template <class T>
std::int64_t prefill_one_head(const PerformerShape& shape, std::int64_t tokens,
                              const float* projection, const T* q, const T* k, const T* v,
                              float* state, float* normalizer, float* running_max,
                              ChunkWorkspace w, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv, m = shape.features, n = shape.projection_rows();
  std::int64_t nonpositive_rows = 0;
  for (std::int64_t begin = 0; begin < tokens; begin += kChunk) {
    const std::int64_t rows = std::min(kChunk, tokens - begin);
    // Features of the chunk's queries and keys.
    project_rows(q + begin * dk, rows, dk, projection, n, w.proj);
    for (std::int64_t r = 0; r < rows; ++r) query_features(shape, w.proj + r * n, w.phi_q + r * m);
    project_rows(k + begin * dk, rows, dk, projection, n, w.proj);
    for (std::int64_t r = 0; r < rows; ++r) {
      w.key_scale[r] = key_features(shape, w.proj + r * n, k + (begin + r) * dk, w.phi_k + r * m);
      for (std::int64_t j = 0; j < dv; ++j) w.values[r * dv + j] = to_float(v[(begin + r) * dv + j]);
    }
    // Running max at every row: row r's sum is taken relative to M_r, exactly as the recurrence
    // would have it after token r.
    const float carried_max = *running_max;
    float current = carried_max;
    for (std::int64_t r = 0; r < rows; ++r) w.row_max[r] = current = std::max(current, w.key_scale[r]);

    // Inter-chunk: phi(q_r) against the carried (S, z), brought from M_carried to M_r.
    std::fill(w.numerator, w.numerator + rows * dv, 0.0f);
    std::fill(w.denominator, w.denominator + rows, 0.0f);
    for (std::int64_t i = 0; i < m; ++i) {
      const float* row = state + i * dv;
      const float z = normalizer[i];
      for (std::int64_t r = 0; r < rows; ++r) {
        const float a = w.phi_q[r * m + i];
        w.denominator[r] += a * z;
        float* num = w.numerator + r * dv;
#pragma omp simd
        for (std::int64_t j = 0; j < dv; ++j) num[j] += a * row[j];
      }
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const float rescale = exp_nonpositive(carried_max - w.row_max[r]);
      w.denominator[r] *= rescale;
      float* num = w.numerator + r * dv;
#pragma omp simd
      for (std::int64_t j = 0; j < dv; ++j) num[j] *= rescale;
    }

    // Intra-chunk: keys c <= r with weight exp(c_c - M_r) phi(q_r).phi(k_c); c_c <= M_r, so the
    // exponent is never positive.
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* fq = w.phi_q + r * m;
      float* num = w.numerator + r * dv;
      float denominator = w.denominator[r];
      for (std::int64_t c = 0; c <= r; ++c) {
        const float* fk = w.phi_k + c * m;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (std::int64_t i = 0; i < m; ++i) dot += fq[i] * fk[i];
        const float weight = exp_nonpositive(w.key_scale[c] - w.row_max[r]) * dot;
        denominator += weight;
        const float* value = w.values + c * dv;
#pragma omp simd
        for (std::int64_t j = 0; j < dv; ++j) num[j] += weight * value[j];
      }
      if (nonpositive(denominator)) ++nonpositive_rows;
      const float inverse = 1.0f / denominator;
      T* o = out + (begin + r) * dv;
      for (std::int64_t j = 0; j < dv; ++j) o[j] = from_float<T>(num[j] * inverse);
    }

    // Fold the chunk into the carried state, relative to the chunk's final max M_end:
    // S = S exp(M_carried - M_end) + sum_c exp(c_c - M_end) phi(k_c) v_c^T (and z likewise).
    const float end_max = w.row_max[rows - 1];
    const float rescale = exp_nonpositive(carried_max - end_max);
    for (std::int64_t c = 0; c < rows; ++c) w.key_scale[c] = exp_nonpositive(w.key_scale[c] - end_max);
    for (std::int64_t i = 0; i < m; ++i) {
      float* row = state + i * dv;
      float z = normalizer[i] * rescale;
#pragma omp simd
      for (std::int64_t j = 0; j < dv; ++j) row[j] *= rescale;
      for (std::int64_t c = 0; c < rows; ++c) {
        const float a = w.key_scale[c] * w.phi_k[c * m + i];
        z += a;
        const float* value = w.values + c * dv;
#pragma omp simd
        for (std::int64_t j = 0; j < dv; ++j) row[j] += a * value[j];
      }
      normalizer[i] = z;
    }
    *running_max = end_max;
  }
  return nonpositive_rows;
}
}  // namespace

void pack_performer_projection(const MatrixD& projection, float* packed) {
  const std::int64_t rows = projection.rows, dk = projection.cols;
  const double scale = std::pow(static_cast<double>(dk), -0.25);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t d = 0; d < dk; ++d) packed[d * rows + i] = static_cast<float>(projection(i, d) * scale);
  }
}

void performer_reset_state(const PerformerShape& shape, float* state, float* normalizer,
                           float* running_max) {
  const std::int64_t m = shape.features;
  std::fill(state, state + shape.batch_heads * m * shape.dv, 0.0f);
  std::fill(normalizer, normalizer + shape.batch_heads * m, 0.0f);
  std::fill(running_max, running_max + shape.batch_heads, -std::numeric_limits<float>::infinity());
}

std::int64_t performer_prefill_workspace_floats(const PerformerShape& shape, int threads) {
  return static_cast<std::int64_t>(std::max(threads, 1)) * ChunkWorkspace::floats(shape);
}

template <class T>
std::int64_t performer_decode_step(const PerformerShape& shape, const float* projection, const T* q,
                                   const T* k, const T* v, float* state, float* normalizer,
                                   float* running_max, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv, m = shape.features;
  std::int64_t nonpositive_rows = 0;
#pragma omp parallel for schedule(static) reduction(+ : nonpositive_rows) \
    if (shape.batch_heads * m * dv >= kParallelStateElements)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    nonpositive_rows += decode_one_head(shape, projection, q + bh * dk, k + bh * dk, v + bh * dv,
                                        state + bh * m * dv, normalizer + bh * m, running_max + bh,
                                        out + bh * dv);
  }
  return nonpositive_rows;
}

template <class T>
std::int64_t performer_prefill_chunkwise(const PerformerShape& shape, std::int64_t tokens,
                                         const float* projection, const T* q, const T* k,
                                         const T* v, float* state, float* normalizer,
                                         float* running_max, float* workspace, int threads, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv, m = shape.features;
  const std::int64_t slice = ChunkWorkspace::floats(shape);
  const int team = static_cast<int>(std::clamp<std::int64_t>(shape.batch_heads, 1, std::max(threads, 1)));
  std::int64_t nonpositive_rows = 0;
#pragma omp parallel num_threads(team) reduction(+ : nonpositive_rows)
  {
    // The workspace has one slice per thread of the team, sized by the caller's thread count.
    const ChunkWorkspace w(shape, workspace + omp_get_thread_num() * slice);
#pragma omp for schedule(static)
    for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
      nonpositive_rows += prefill_one_head(shape, tokens, projection, q + bh * tokens * dk,
                                           k + bh * tokens * dk, v + bh * tokens * dv,
                                           state + bh * m * dv, normalizer + bh * m,
                                           running_max + bh, w, out + bh * tokens * dv);
    }
  }
  return nonpositive_rows;
}

template <class T>
std::int64_t performer_prefill_recurrent(const PerformerShape& shape, std::int64_t tokens,
                                         const float* projection, const T* q, const T* k,
                                         const T* v, float* state, float* normalizer,
                                         float* running_max, T* out) {
  const std::int64_t dk = shape.dk, dv = shape.dv, m = shape.features;
  std::int64_t nonpositive_rows = 0;
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t row = bh * tokens + t;
      nonpositive_rows += decode_one_head(shape, projection, q + row * dk, k + row * dk, v + row * dv,
                                          state + bh * m * dv, normalizer + bh * m, running_max + bh,
                                          out + row * dv);
    }
  }
  return nonpositive_rows;
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                  \
  template std::int64_t performer_decode_step<T>(const PerformerShape&, const float*, const T*,    \
                                                 const T*, const T*, float*, float*, float*, T*);  \
  template std::int64_t performer_prefill_chunkwise<T>(const PerformerShape&, std::int64_t,        \
                                                       const float*, const T*, const T*, const T*, \
                                                       float*, float*, float*, float*, int, T*);   \
  template std::int64_t performer_prefill_recurrent<T>(const PerformerShape&, std::int64_t,        \
                                                       const float*, const T*, const T*, const T*, \
                                                       float*, float*, float*, T*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
