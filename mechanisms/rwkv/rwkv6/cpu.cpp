#include "mechanisms/rwkv/rwkv6/cpu.hpp"

#include <algorithm>
#include <cmath>

#include "mechanisms/common/bf16.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kChunk = kRwkv6Chunk, kSub = kRwkv6SubChunk, kMaxDim = kRwkvMaxDim;

#pragma omp declare simd
inline float log_decay(float d) { return std::max(rwkv6_log_decay(d), -100.0f); }

template <class T>
void recurrent_head(std::int64_t dim, const float* __restrict u, std::int64_t tokens, const T* r, const T* k,
                    const T* v, const T* d, float* __restrict S, T* out) {
  alignas(64) float ri[kMaxDim], ki[kMaxDim], vj[kMaxDim], wi[kMaxDim], o[kMaxDim];
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t row = t * dim;
    float bonus = 0.0f;
#pragma omp simd reduction(+ : bonus)
    for (std::int64_t i = 0; i < dim; ++i) {
      ri[i] = to_float(r[row + i]);
      ki[i] = to_float(k[row + i]);
      vj[i] = to_float(v[row + i]);
      wi[i] = exp_nonpositive(log_decay(to_float(d[row + i])));
      bonus += ri[i] * u[i] * ki[i];
    }
    // o = r^T S_{t-1} + (r . (u * k)) v, then S = diag(w) S + k v^T, in one pass over S.
#pragma omp simd
    for (std::int64_t j = 0; j < dim; ++j) o[j] = bonus * vj[j];
    for (std::int64_t i = 0; i < dim; ++i) {
      float* __restrict s = S + i * dim;
      const float a = ri[i], w = wi[i], b = ki[i];
#pragma omp simd
      for (std::int64_t j = 0; j < dim; ++j) {
        const float x = s[j];
        o[j] += a * x;
        s[j] = w * x + b * vj[j];
      }
    }
    for (std::int64_t j = 0; j < dim; ++j) out[row + j] = from_float<T>(o[j]);
  }
}

template <class T>
void chunkwise_head(std::int64_t dim, const float* __restrict u, std::int64_t tokens, const T* r, const T* k,
                    const T* v, const T* d, float* __restrict S, T* out) {
  // Rows of dim floats; B holds the inclusive cumulative log-decay of the chunk.
  alignas(64) float R[kChunk * kMaxDim], K[kChunk * kMaxDim], V[kChunk * kMaxDim], B[kChunk * kMaxDim];
  alignas(64) float Q[kChunk * kMaxDim], KS[kChunk * kMaxDim], O[kChunk * kMaxDim];
  alignas(64) float A[kChunk * kChunk];
  alignas(64) float m[kMaxDim], tmp[kMaxDim];
  for (std::int64_t begin = 0; begin < tokens; begin += kChunk) {
    const std::int64_t n = std::min(kChunk, tokens - begin);
    for (std::int64_t t = 0; t < n; ++t) {
      const std::int64_t src = (begin + t) * dim;
      float* Rt = R + t * dim;
      float* Kt = K + t * dim;
      float* Vt = V + t * dim;
      float* Bt = B + t * dim;
      const float* Bp = t > 0 ? B + (t - 1) * dim : nullptr;
#pragma omp simd
      for (std::int64_t i = 0; i < dim; ++i) {
        Rt[i] = to_float(r[src + i]);
        Kt[i] = to_float(k[src + i]);
        Vt[i] = to_float(v[src + i]);
        Bt[i] = log_decay(to_float(d[src + i]));
      }
      if (Bp) {
#pragma omp simd
        for (std::int64_t i = 0; i < dim; ++i) Bt[i] += Bp[i];
      }
    }
    // Inter-chunk: o_t = (r_t * e^{B_{t-1}})^T S_0, and the bonus term on the diagonal of A.
    for (std::int64_t t = 0; t < n; ++t) {
      const float* Rt = R + t * dim;
      const float* Kt = K + t * dim;
      float* Ot = O + t * dim;
      float bonus = 0.0f;
      if (t == 0) {
#pragma omp simd reduction(+ : bonus)
        for (std::int64_t i = 0; i < dim; ++i) {
          tmp[i] = Rt[i];
          bonus += Rt[i] * u[i] * Kt[i];
        }
      } else {
        const float* Bp = B + (t - 1) * dim;
#pragma omp simd reduction(+ : bonus)
        for (std::int64_t i = 0; i < dim; ++i) {
          tmp[i] = Rt[i] * exp_nonpositive(Bp[i]);
          bonus += Rt[i] * u[i] * Kt[i];
        }
      }
      A[t * kChunk + t] = bonus;
#pragma omp simd
      for (std::int64_t j = 0; j < dim; ++j) Ot[j] = 0.0f;
      for (std::int64_t i = 0; i < dim; ++i) {
        const float a = tmp[i];
        const float* s = S + i * dim;
#pragma omp simd
        for (std::int64_t j = 0; j < dim; ++j) Ot[j] += a * s[j];
      }
    }
    // Intra-chunk weights A[t][s], s < t.
    const std::int64_t subs = (n + kSub - 1) / kSub;
    for (std::int64_t I = 0; I < subs; ++I) {
      const std::int64_t first = I * kSub, last = std::min(n, first + kSub) - 1;
      // KS_s = k_s * e^{B_end - B_s}, end = the last token of s's sub-chunk.
      const float* Bend = B + last * dim;
      for (std::int64_t s = first; s <= last; ++s) {
        const float* Ks = K + s * dim;
        const float* Bs = B + s * dim;
        float* KSs = KS + s * dim;
#pragma omp simd
        for (std::int64_t i = 0; i < dim; ++i) KSs[i] = Ks[i] * exp_nonpositive(Bend[i] - Bs[i]);
      }
      if (I == 0) continue;
      // Q_t = r_t * e^{B_{t-1} - B_ref}, ref = the token before t's sub-chunk.
      const float* Bref = B + (first - 1) * dim;
      for (std::int64_t t = first; t <= last; ++t) {
        const float* Rt = R + t * dim;
        const float* Bp = B + (t - 1) * dim;
        float* Qt = Q + t * dim;
#pragma omp simd
        for (std::int64_t i = 0; i < dim; ++i) Qt[i] = Rt[i] * exp_nonpositive(Bp[i] - Bref[i]);
      }
    }
    for (std::int64_t I = 0; I < subs; ++I) {
      const std::int64_t first = I * kSub, last = std::min(n, first + kSub) - 1;
      // Blocks below the diagonal: sub-chunks J < I.
      for (std::int64_t J = 0; J < I; ++J) {
        const float* Bref = B + (first - 1) * dim;
        const float* Bend = B + (J * kSub + kSub - 1) * dim;
#pragma omp simd
        for (std::int64_t i = 0; i < dim; ++i) m[i] = exp_nonpositive(Bref[i] - Bend[i]);
        for (std::int64_t t = first; t <= last; ++t) {
          const float* Qt = Q + t * dim;
#pragma omp simd
          for (std::int64_t i = 0; i < dim; ++i) tmp[i] = Qt[i] * m[i];
          for (std::int64_t s = J * kSub; s < J * kSub + kSub; ++s) {
            const float* KSs = KS + s * dim;
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (std::int64_t i = 0; i < dim; ++i) dot += tmp[i] * KSs[i];
            A[t * kChunk + s] = dot;
          }
        }
      }
      // The diagonal block, pair by pair: e^{B_{t-1} - B_s} for first <= s < t.
      for (std::int64_t t = first + 1; t <= last; ++t) {
        const float* Rt = R + t * dim;
        const float* Bp = B + (t - 1) * dim;
        for (std::int64_t s = first; s < t; ++s) {
          const float* Ks = K + s * dim;
          const float* Bs = B + s * dim;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (std::int64_t i = 0; i < dim; ++i) dot += Rt[i] * Ks[i] * exp_nonpositive(Bp[i] - Bs[i]);
          A[t * kChunk + s] = dot;
        }
      }
    }
    // o_t += sum_{s <= t} A[t][s] v_s, then out.
    for (std::int64_t t = 0; t < n; ++t) {
      float* Ot = O + t * dim;
      for (std::int64_t s = 0; s <= t; ++s) {
        const float a = A[t * kChunk + s];
        const float* Vs = V + s * dim;
#pragma omp simd
        for (std::int64_t j = 0; j < dim; ++j) Ot[j] += a * Vs[j];
      }
      T* o = out + (begin + t) * dim;
      for (std::int64_t j = 0; j < dim; ++j) o[j] = from_float<T>(Ot[j]);
    }
    // State: S = diag(e^{B_last}) S + sum_s (k_s * e^{B_last - B_s}) v_s^T.
    const float* Blast = B + (n - 1) * dim;
    for (std::int64_t s = 0; s < n; ++s) {
      const float* Ks = K + s * dim;
      const float* Bs = B + s * dim;
      float* KSs = KS + s * dim;
#pragma omp simd
      for (std::int64_t i = 0; i < dim; ++i) KSs[i] = Ks[i] * exp_nonpositive(Blast[i] - Bs[i]);
    }
    for (std::int64_t i = 0; i < dim; ++i) {
      float* __restrict row = S + i * dim;
      const float decay = exp_nonpositive(Blast[i]);
#pragma omp simd
      for (std::int64_t j = 0; j < dim; ++j) row[j] *= decay;
      for (std::int64_t s = 0; s < n; ++s) {
        const float a = KS[s * dim + i];
        const float* Vs = V + s * dim;
#pragma omp simd
        for (std::int64_t j = 0; j < dim; ++j) row[j] += a * Vs[j];
      }
    }
  }
}

template <class T>
struct HeadPointers {
  const T *r, *k, *v, *d;
  T* out;
};

template <class T>
HeadPointers<T> head(const RwkvShape& shape, std::int64_t tokens, const RwkvTokens<T>& x, T* out, std::int64_t bh) {
  const std::int64_t offset = bh * tokens * shape.dim;
  return {x.r + offset, x.k + offset, x.v + offset, x.decay + offset, out + offset};
}

}  // namespace

double rwkv6_chunk_flops(std::int64_t n_, std::int64_t dim_) {
  const double n = static_cast<double>(n_), d = static_cast<double>(dim_);
  const double subs = std::ceil(n / kSub);
  const double diagonal_pairs = subs * kSub * (kSub - 1) / 2;  // an upper bound for a short last block
  const double pairs = n * (n - 1) / 2;
  return n * d * 4                      // load: log-decay (exp, max), cumulative sum
         + n * d * 5                    // inter: e^{B}, scaled r, bonus (3)
         + 2 * n * d * d                // inter: r~ S_0
         + n * d * 3 * 2                // KS and Q (sub, exp, mul)
         + (pairs - diagonal_pairs) * 2 * d + n * subs / 2 * d  // off-diagonal dots, m-scaled rows
         + diagonal_pairs * 5 * d       // diagonal pairs: sub, exp, 2 mul, add
         + (pairs + n) * 2 * d          // A V
         + n * d * 3 + d * d + 2 * n * d * d;  // state: KS, decay, K~^T V
}

template <class T>
void rwkv6_recurrent(const RwkvShape& shape, const RwkvParameters& params, std::int64_t tokens,
                     const RwkvTokens<T>& x, float* state, T* out) {
  const std::int64_t dim = shape.dim;
#pragma omp parallel for schedule(static) if (shape.batch_heads * dim * dim * tokens >= kRwkvParallelWork)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    const HeadPointers<T> p = head(shape, tokens, x, out, bh);
    recurrent_head(dim, params.u + (bh % shape.heads) * dim, tokens, p.r, p.k, p.v, p.d, state + bh * dim * dim,
                   p.out);
  }
}

template <class T>
void rwkv6_prefill_chunkwise(const RwkvShape& shape, const RwkvParameters& params, std::int64_t tokens,
                             const RwkvTokens<T>& x, float* state, T* out) {
  const std::int64_t dim = shape.dim;
#pragma omp parallel for schedule(static) if (shape.batch_heads * dim * dim * tokens >= kRwkvParallelWork)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    const HeadPointers<T> p = head(shape, tokens, x, out, bh);
    chunkwise_head(dim, params.u + (bh % shape.heads) * dim, tokens, p.r, p.k, p.v, p.d, state + bh * dim * dim,
                   p.out);
  }
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                         \
  template void rwkv6_recurrent<T>(const RwkvShape&, const RwkvParameters&, std::int64_t, const RwkvTokens<T>&, \
                                   float*, T*);                                                          \
  template void rwkv6_prefill_chunkwise<T>(const RwkvShape&, const RwkvParameters&, std::int64_t,          \
                                           const RwkvTokens<T>&, float*, T*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
