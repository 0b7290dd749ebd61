#include "mechanisms/performer/cpu.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "mechanisms/common/parallel_policy.hpp"
#include "core/bf16.hpp"
#include "mechanisms/common/chunk_matmul.hpp"
#include "mechanisms/common/state_pass.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/common/fast_math.hpp"

namespace arch_bench {

namespace {
constexpr std::int64_t kChunk = kPerformerChunk;
constexpr std::int64_t kMaxFeatures = kPerformerMaxFeatures;
constexpr std::int64_t kMaxDim = kPerformerMaxDim;
constexpr float kEps = static_cast<float>(kPerformerEpsilon);

// Below this many state elements a step is a few microseconds, and waking a second thread costs
// more than it saves (as in linear_attention).

bool nonpositive(float denominator) { return !(denominator > 0.0f) || !std::isfinite(denominator); }

// |x~|^2 / 2 = |x|^2 / (2 sqrt(dk)).
template <class T>
float half_scaled_norm(const T* x, std::int64_t dk) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t c = 0; c < dk; ++c) sum += to_float(x[c]) * to_float(x[c]);
  return sum * (0.5f / std::sqrt(static_cast<float>(dk)));
}

// favor+: f_i = m^(-1/2) (exp(p_i - max p) + eps). For a query this is the whole stabilised
// feature (the |q~|^2/2 term and the max are per-token constants); returns max p.
float favor_features(const float* proj, std::int64_t m, float* f) {
  float top = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : top)
  for (std::int64_t i = 0; i < m; ++i) top = proj[i] > top ? proj[i] : top;
  const float ratio = 1.0f / std::sqrt(static_cast<float>(m));
#pragma omp simd
  for (std::int64_t i = 0; i < m; ++i) f[i] = ratio * (exp_nonpositive(proj[i] - top) + kEps);
  return top;
}

// Published stabiliser: f_i = m^(-1/2) (exp(p_i - shift) + eps) with shift >= max p (a query's
// |q~|^2/2 + max p, a key's |k~|^2/2 + M), so every exponent is <= 0.
void published_features(const float* proj, std::int64_t m, float shift, float* f) {
  const float ratio = 1.0f / std::sqrt(static_cast<float>(m));
#pragma omp simd
  for (std::int64_t i = 0; i < m; ++i) f[i] = ratio * (exp_nonpositive(proj[i] - shift) + kEps);
}

float max_of(const float* x, std::int64_t n) {
  float top = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : top)
  for (std::int64_t i = 0; i < n; ++i) top = x[i] > top ? x[i] : top;
  return top;
}

// Published: brings (S, z), held at key max `from`, to the larger `to`: the exp part scales by
// a = exp(from - to), the eps part (m^(-1/2) eps per key) stays, S <- a S + m^(-1/2) eps (1 - a) sum v.
void raise_published_max(std::int64_t m, std::int64_t dv, float from, float to, float* state, float* normalizer,
                         const float* value_sum) {
  if (!(to > from)) return;
  const float a = exp_nonpositive(from - to);
  const float floor = kEps / std::sqrt(static_cast<float>(m)) * (1.0f - a);
  const float count = value_sum[dv];
  for (std::int64_t i = 0; i < m; ++i) {
    normalizer[i] = normalizer[i] * a + floor * count;
    float* row = state + i * dv;
#pragma omp simd
    for (std::int64_t j = 0; j < dv; ++j) row[j] = row[j] * a + floor * value_sum[j];
  }
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
    // rint rounds to nearest even under the default rounding mode, and unlike roundeven it has
    // a vector form (GCC 12 leaves a loop calling roundevenf scalar).
    const float n = __builtin_rintf(x * 0.636619772367581343f);  // x / (pi/2)
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
template <class T>
void query_features(const PerformerShape& shape, const float* proj, const T* q, float* f) {
  if (shape.kind == PerformerFeatures::trig) {
    trig_features(proj, shape.features, f);
  } else if (shape.published()) {
    published_features(proj, shape.features, half_scaled_norm(q, shape.dk) + max_of(proj, shape.features), f);
  } else {
    favor_features(proj, shape.features, f);
  }
}

// Key features and the key's log-scale (favor+: max_i w_i.k~ - |k~|^2/2; trig: |k~|^2/2).
// Published: the features at key max `key_max` (>= this key's max p), and log-scale 0 (S and z are
// absolute, no running max to weigh against).
template <class T>
float key_features(const PerformerShape& shape, const float* proj, const T* k, float* f, float key_max = 0.0f) {
  const float half_norm = half_scaled_norm(k, shape.dk);
  if (shape.published()) {
    published_features(proj, shape.features, half_norm + key_max, f);
    return 0.0f;
  }
  if (shape.kind == PerformerFeatures::trig) {
    trig_features(proj, shape.features, f);
    return half_norm;
  }
  return favor_features(proj, shape.features, f) - half_norm;
}

// One token of one head: fold (k, v) into (S, z, M), then out = phi(q).S / phi(q).z.
template <class T>
bool decode_one_head(const PerformerShape& shape, const float* projection, const T* q, const T* k,
                     const T* v, float* state, float* normalizer, float* running_max, T* out,
                     float* value_sum) {
  const std::int64_t m = shape.features, dk = shape.dk, dv = shape.dv, n = shape.projection_rows();
  alignas(64) float x[2][kMaxDim];
  alignas(64) float proj[2][kMaxFeatures];
  alignas(64) float phi_q[kMaxFeatures], phi_k[kMaxFeatures], weighted_k[kMaxFeatures];
  alignas(64) float value[kMaxDim], numerator[kMaxDim];
  // q and k projected together: one pass over W for both.
  widen_row(q, dk, x[0]);
  widen_row(k, dk, x[1]);
  chunk_matmul(2, n, dk, x[0], kMaxDim, projection, n, proj[0], kMaxFeatures);
  query_features(shape, proj[0], q, phi_q);
  widen_row(v, dv, value);
  if (shape.published()) {
    // M rises to this key's max when it is larger; the state follows (eps part unchanged), then
    // the key enters at the new M and the value sum and count grow by this token.
    const float new_max = std::max(*running_max, max_of(proj[1], m));
    raise_published_max(m, dv, *running_max, new_max, state, normalizer, value_sum);
    *running_max = new_max;
    key_features(shape, proj[1], k, phi_k, new_max);
    for (std::int64_t j = 0; j < dv; ++j) value_sum[j] += value[j];
    value_sum[dv] += 1.0f;
    float denominator = 0.0f;
    for (std::int64_t i = 0; i < m; ++i) {
      normalizer[i] += phi_k[i];
      denominator += phi_q[i] * normalizer[i];
    }
    decay_update_read(m, dv, kNoDecay, phi_k, phi_q, value, state, numerator);
    const float inverse = 1.0f / denominator;
    for (std::int64_t j = 0; j < dv; ++j) out[j] = from_float<T>(numerator[j] * inverse);
    return nonpositive(denominator);
  }
  const float key_scale = key_features(shape, proj[1], k, phi_k);
  // Running max: a key above M rescales the state by exp(M_old - M_new) <= 1 (0 on the first key,
  // when M = -inf); the key itself enters with weight exp(c_k - M_new) <= 1.
  const float new_max = std::max(*running_max, key_scale);
  const float rescale = exp_nonpositive(*running_max - new_max);
  const float weight = exp_nonpositive(key_scale - new_max);
  *running_max = new_max;
  float denominator = 0.0f;
  for (std::int64_t i = 0; i < m; ++i) {
    weighted_k[i] = weight * phi_k[i];
    normalizer[i] = normalizer[i] * rescale + weighted_k[i];
    denominator += phi_q[i] * normalizer[i];
  }
  // One pass over S: each row is rescaled, updated and immediately read back for the output.
  decay_update_read(m, dv, rescale, weighted_k, phi_q, value, state, numerator);
  const float inverse = 1.0f / denominator;
  for (std::int64_t j = 0; j < dv; ++j) out[j] = from_float<T>(numerator[j] * inverse);
  return nonpositive(denominator);
}

// phi_k_t [m, kChunk] = phi_k [rows, m]^T, 16 features at a time: the 16 rows of phi_k_t a block
// writes (4 KiB) stay in L1 while every key's 16 features go in. Written a key at a time, each key's
// m stores went to m lines spread over 64 KiB, and that copy was a third of the chunkwise prefill's
// own time (perf, m = 256, T = 2048).
void transpose_features(std::int64_t rows, std::int64_t m, const float* __restrict phi_k, float* __restrict phi_k_t) {
  constexpr std::int64_t kBlock = 16;
  for (std::int64_t i0 = 0; i0 < m; i0 += kBlock) {
    const std::int64_t end = std::min(m, i0 + kBlock);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t i = i0; i < end; ++i) phi_k_t[i * kChunk + r] = phi_k[r * m + i];
    }
  }
}

// Per-thread workspace of the chunkwise prefill, carved from one slice.
struct ChunkWorkspace {
  float* x;            // [kChunk, dk]   q or k rows widened to fp32
  float* proj;         // [kChunk, n]    their projections
  float* phi_q;        // [kChunk, m]
  float* phi_k_t;      // [m, kChunk]    key features, transposed (the B of the scores, the A of the fold)
  float* phi_k;        // [kChunk, m]    key features as computed, before the transpose
  float* values;       // [kChunk, dv]
  float* numerator;    // [kChunk, dv]
  float* scores;       // [kChunk, kChunk] intra-chunk weights
  float* denominator;  // [kChunk]
  float* key_scale;    // [kChunk]       the keys' log-scales c_j
  float* row_max;      // [kChunk]       running max M at each row's token
  float* fold_weight;  // [kChunk]       exp(c_j - M_end)

  static std::int64_t floats(const PerformerShape& shape) {
    return kChunk * (shape.dk + shape.projection_rows() + 3 * shape.features + 2 * shape.dv + kChunk + 4);
  }
  ChunkWorkspace(const PerformerShape& shape, float* base) {
    x = base;
    proj = x + kChunk * shape.dk;
    phi_q = proj + kChunk * shape.projection_rows();
    phi_k_t = phi_q + kChunk * shape.features;
    phi_k = phi_k_t + kChunk * shape.features;
    values = phi_k + kChunk * shape.features;
    numerator = values + kChunk * shape.dv;
    scores = numerator + kChunk * shape.dv;
    denominator = scores + kChunk * kChunk;
    key_scale = denominator + kChunk;
    row_max = key_scale + kChunk;
    fold_weight = row_max + kChunk;
  }
};

// max(top, max_{t,i} w_i.k~_t) over one head's `tokens` keys, a chunk at a time through x
// [kChunk, dk] and proj [kChunk, n] (the prefill's workspace: nothing is allocated while timed).
template <class T>
float head_key_max(const PerformerShape& shape, std::int64_t tokens, const float* projection, const T* k, float* x,
                   float* proj, float top) {
  const std::int64_t dk = shape.dk, n = shape.projection_rows();
  for (std::int64_t begin = 0; begin < tokens; begin += kChunk) {
    const std::int64_t rows = std::min(kChunk, tokens - begin);
    widen_row(k + begin * dk, rows * dk, x);
    chunk_matmul(rows, n, dk, x, dk, projection, n, proj, n);
    top = std::max(top, max_of(proj, rows * n));
  }
  return top;
}

template <class T>
std::int64_t prefill_one_head(const PerformerShape& shape, std::int64_t tokens,
                              const float* projection, const T* q, const T* k, const T* v,
                              float* state, float* normalizer, float* running_max,
                              const ChunkWorkspace& w, T* out, float* value_sum) {
  const std::int64_t dk = shape.dk, dv = shape.dv, m = shape.features, n = shape.projection_rows();
  std::int64_t nonpositive_rows = 0;
  // Published: every row uses the key max over everything up to the last token, taken in a first
  // pass over the keys (one more [tokens, dk] x [dk, m] projection); S and z are absolute, so the
  // running-max weights below are all exp(0) = 1.
  float published_max = 0.0f;
  if (shape.published()) {
    published_max = head_key_max(shape, tokens, projection, k, w.x, w.proj, *running_max);
    raise_published_max(m, dv, *running_max, published_max, state, normalizer, value_sum);
  }
  for (std::int64_t begin = 0; begin < tokens; begin += kChunk) {
    const std::int64_t rows = std::min(kChunk, tokens - begin);
    // Features of the chunk's queries and keys: [rows, dk] x [dk, n] projections.
    widen_row(q + begin * dk, rows * dk, w.x);
    chunk_matmul(rows, n, dk, w.x, dk, projection, n, w.proj, n);
    for (std::int64_t r = 0; r < rows; ++r) query_features(shape, w.proj + r * n, q + (begin + r) * dk, w.phi_q + r * m);
    widen_row(k + begin * dk, rows * dk, w.x);
    chunk_matmul(rows, n, dk, w.x, dk, projection, n, w.proj, n);
    for (std::int64_t r = 0; r < rows; ++r) {
      w.key_scale[r] = key_features(shape, w.proj + r * n, k + (begin + r) * dk, w.phi_k + r * m, published_max);
    }
    transpose_features(rows, m, w.phi_k, w.phi_k_t);
    widen_row(v + begin * dv, rows * dv, w.values);
    if (shape.published()) {
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t j = 0; j < dv; ++j) value_sum[j] += w.values[r * dv + j];
      }
      value_sum[dv] += static_cast<float>(rows);
    }
    // Running max at every row: row r's sum is taken relative to M_r, exactly as the recurrence
    // would have it after token r.
    const float carried_max = shape.published() ? 0.0f : *running_max;
    float current = carried_max;
    for (std::int64_t r = 0; r < rows; ++r) w.row_max[r] = current = std::max(current, w.key_scale[r]);

    // Inter-chunk: phi(Q) against the carried (S, z), brought from M_carried to each M_r.
    chunk_matmul(rows, dv, m, w.phi_q, m, state, dv, w.numerator, dv);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* fq = w.phi_q + r * m;
      float denominator = 0.0f;
#pragma omp simd reduction(+ : denominator)
      for (std::int64_t i = 0; i < m; ++i) denominator += fq[i] * normalizer[i];
      const float rescale = exp_nonpositive(carried_max - w.row_max[r]);
      w.denominator[r] = denominator * rescale;
      float* num = w.numerator + r * dv;
#pragma omp simd
      for (std::int64_t j = 0; j < dv; ++j) num[j] *= rescale;
    }

    // Intra-chunk: scores phi(q_r).phi(k_c), weighted by exp(c_c - M_r) (c_c <= M_r, so never
    // above 1) and masked to c <= r, then applied to the chunk's values.
    chunk_matmul(rows, rows, m, w.phi_q, m, w.phi_k_t, kChunk, w.scores, kChunk, {.lower_c = true});
    for (std::int64_t r = 0; r < rows; ++r) {
      float* score = w.scores + r * kChunk;
      float sum = 0.0f;
      for (std::int64_t c = 0; c <= r; ++c) {
        score[c] *= exp_nonpositive(w.key_scale[c] - w.row_max[r]);
        sum += score[c];
      }
      std::fill(score + r + 1, score + rows, 0.0f);
      w.denominator[r] += sum;
    }
    chunk_matmul(rows, dv, rows, w.scores, kChunk, w.values, dv, w.numerator, dv, {.accumulate = true});
    for (std::int64_t r = 0; r < rows; ++r) {
      const float denominator = w.denominator[r];
      if (nonpositive(denominator)) ++nonpositive_rows;
      const float inverse = 1.0f / denominator;
      const float* num = w.numerator + r * dv;
      T* o = out + (begin + r) * dv;
      for (std::int64_t j = 0; j < dv; ++j) o[j] = from_float<T>(num[j] * inverse);
    }

    // Fold the chunk into the carried state, relative to the chunk's final max M_end:
    // S = S exp(M_carried - M_end) + sum_c exp(c_c - M_end) phi(k_c) v_c^T (and z likewise).
    const float end_max = w.row_max[rows - 1];
    const float rescale = exp_nonpositive(carried_max - end_max);
    for (std::int64_t c = 0; c < rows; ++c) w.fold_weight[c] = exp_nonpositive(w.key_scale[c] - end_max);
    for (std::int64_t i = 0; i < m; ++i) {
      float* fk = w.phi_k_t + i * kChunk;
      float z = 0.0f;
#pragma omp simd reduction(+ : z)
      for (std::int64_t c = 0; c < rows; ++c) {
        fk[c] *= w.fold_weight[c];
        z += fk[c];
      }
      normalizer[i] = normalizer[i] * rescale + z;
    }
#pragma omp simd
    for (std::int64_t e = 0; e < m * dv; ++e) state[e] *= rescale;
    chunk_matmul(m, dv, rows, w.phi_k_t, kChunk, w.values, dv, state, dv, {.accumulate = true});
    if (!shape.published()) *running_max = end_max;
  }
  if (shape.published()) *running_max = published_max;
  return nonpositive_rows;
}

// The published stabiliser needs value_sum; the kernels check once, before any thread starts.
void require_value_sum(const PerformerShape& shape, const float* value_sum) {
  if (shape.published() && value_sum == nullptr) {
    throw std::invalid_argument("performer: the published stabiliser needs the value_sum state");
  }
  if (shape.published() && shape.kind != PerformerFeatures::favor_plus) {
    throw std::invalid_argument("performer: the published stabiliser applies to favor+ features only");
  }
}
}  // namespace

#if defined(ARCH_BENCH_KERNEL_DISPATCHER)  // not a kernel: compiled once, with the dispatched forms
void pack_performer_projection(const MatrixD& projection, float* packed) {
  const std::int64_t rows = projection.rows, dk = projection.cols;
  const double scale = std::pow(static_cast<double>(dk), -0.25);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t d = 0; d < dk; ++d) packed[d * rows + i] = static_cast<float>(projection(i, d) * scale);
  }
}
#endif

#if defined(ARCH_BENCH_KERNEL_DISPATCHER)  // not a kernel: compiled once, with the dispatched forms
void performer_reset_state(const PerformerShape& shape, float* state, float* normalizer,
                           float* running_max, float* value_sum) {
  const std::int64_t m = shape.features;
  if (value_sum != nullptr) std::fill(value_sum, value_sum + performer_value_sum_floats(shape), 0.0f);
  std::fill(state, state + shape.batch_heads * m * shape.dv, 0.0f);
  std::fill(normalizer, normalizer + shape.batch_heads * m, 0.0f);
  std::fill(running_max, running_max + shape.batch_heads, -std::numeric_limits<float>::infinity());
}
#endif

#if defined(ARCH_BENCH_KERNEL_DISPATCHER)  // not a kernel: compiled once, with the dispatched forms
std::int64_t performer_prefill_workspace_floats(const PerformerShape& shape, int threads) {
  return static_cast<std::int64_t>(std::max(threads, 1)) * ChunkWorkspace::floats(shape);
}
#endif

template <class T, KernelVariant V>
void performer_key_max(const PerformerShape& shape, std::int64_t tokens, const float* projection, const T* k,
                       float* key_max) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (performer_key_max<T, W>(shape, tokens, projection, k, key_max)))
  std::vector<float> x(static_cast<std::size_t>(kChunk * shape.dk)),
      proj(static_cast<std::size_t>(kChunk * shape.projection_rows()));
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    key_max[bh] = head_key_max(shape, tokens, projection, k + bh * tokens * shape.dk, x.data(), proj.data(), key_max[bh]);
  }
}

template <class T, KernelVariant V>
std::int64_t performer_decode_step(const PerformerShape& shape, const float* projection, const T* q,
                                   const T* k, const T* v, float* state, float* normalizer,
                                   float* running_max, T* out, float* value_sum) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (performer_decode_step<T, W>(shape, projection, q, k, v, state, normalizer,
      running_max, out, value_sum)))
  const std::int64_t dk = shape.dk, dv = shape.dv, m = shape.features;
  require_value_sum(shape, value_sum);
  std::int64_t nonpositive_rows = 0;
#pragma omp parallel for schedule(static) reduction(+ : nonpositive_rows) \
    if (shape.batch_heads * m * dv >= kParallelStateElements)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    nonpositive_rows += decode_one_head(shape, projection, q + bh * dk, k + bh * dk, v + bh * dv,
                                        state + bh * m * dv, normalizer + bh * m, running_max + bh,
                                        out + bh * dv, value_sum ? value_sum + bh * (dv + 1) : nullptr);
  }
  return nonpositive_rows;
}

template <class T, KernelVariant V>
std::int64_t performer_prefill_chunkwise(const PerformerShape& shape, std::int64_t tokens,
                                         const float* projection, const T* q, const T* k,
                                         const T* v, float* state, float* normalizer,
                                         float* running_max, float* workspace, int threads, T* out,
                                         float* value_sum) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (performer_prefill_chunkwise<T, W>(shape, tokens, projection, q, k, v, state,
      normalizer, running_max, workspace, threads, out, value_sum)))
  const std::int64_t dk = shape.dk, dv = shape.dv, m = shape.features;
  require_value_sum(shape, value_sum);
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
                                           running_max + bh, w, out + bh * tokens * dv,
                                           value_sum ? value_sum + bh * (dv + 1) : nullptr);
    }
  }
  return nonpositive_rows;
}

template <class T, KernelVariant V>
std::int64_t performer_prefill_recurrent(const PerformerShape& shape, std::int64_t tokens,
                                         const float* projection, const T* q, const T* k,
                                         const T* v, float* state, float* normalizer,
                                         float* running_max, T* out, float* value_sum) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (performer_prefill_recurrent<T, W>(shape, tokens, projection, q, k, v, state,
      normalizer, running_max, out, value_sum)))
  const std::int64_t dk = shape.dk, dv = shape.dv, m = shape.features;
  require_value_sum(shape, value_sum);
  std::int64_t nonpositive_rows = 0;
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t row = bh * tokens + t;
      nonpositive_rows += decode_one_head(shape, projection, q + row * dk, k + row * dk, v + row * dv,
                                          state + bh * m * dv, normalizer + bh * m, running_max + bh,
                                          out + row * dv, value_sum ? value_sum + bh * (dv + 1) : nullptr);
    }
  }
  return nonpositive_rows;
}

#define ARCH_BENCH_PERFORMER_KERNELS(PREFIX, T, V)                                                          \
  PREFIX void performer_key_max<T, V>(const PerformerShape&, std::int64_t, const float*, const T*, float*); \
  PREFIX std::int64_t performer_decode_step<T, V>(const PerformerShape&, const float*, const T*,            \
                                                 const T*, const T*, float*, float*, float*, T*, float*);   \
  PREFIX std::int64_t performer_prefill_chunkwise<T, V>(const PerformerShape&, std::int64_t,                \
                                                       const float*, const T*, const T*, const T*,          \
                                                       float*, float*, float*, float*, int, T*, float*);    \
  PREFIX std::int64_t performer_prefill_recurrent<T, V>(const PerformerShape&, std::int64_t,                \
                                                       const float*, const T*, const T*, const T*,          \
                                                       float*, float*, float*, T*, float*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_PERFORMER_KERNELS)

}  // namespace arch_bench
