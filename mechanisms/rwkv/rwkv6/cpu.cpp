#include "mechanisms/rwkv/rwkv6/cpu.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/bf16.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/common/chunk_matmul.hpp"
#include "mechanisms/common/float8.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kChunk = kRwkv6Chunk, kSub = kRwkv6SubChunk, kMaxDim = kRwkvMaxDim;

#pragma omp declare simd
inline float log_decay(float d) { return std::max(rwkv6_log_decay(d), -100.0f); }

// Columns [j0, j0 + 8 kVectors) of one token's step: o[cols] = bonus v[cols] + r^T S[:, cols] and
// S[:, cols] = diag(w) S[:, cols] + k v[cols]^T, the value slice and the output slice held in
// registers so that each state row slice is loaded once and stored once.
template <int kVectors>
inline void update_columns(std::int64_t dim, std::int64_t j0, float bonus, const float* __restrict ri,
                           const float* __restrict wi, const float* __restrict ki, const float* __restrict vj,
                           float* __restrict S, float* __restrict o) {
  float8 v[kVectors], acc[kVectors];
  for (int c = 0; c < kVectors; ++c) {
    v[c] = load_float8(vj + j0 + c * kFloat8Lanes);
    acc[c] = bonus * v[c];
  }
  for (std::int64_t i = 0; i < dim; ++i) {
    float* row = S + i * dim + j0;
    const float a = ri[i], w = wi[i], b = ki[i];
#pragma GCC unroll 4
    for (int c = 0; c < kVectors; ++c) {
      const float8 x = load_float8(row + c * kFloat8Lanes);
      acc[c] += a * x;
      store_float8(row + c * kFloat8Lanes, w * x + b * v[c]);
    }
  }
  for (int c = 0; c < kVectors; ++c) store_float8(o + j0 + c * kFloat8Lanes, acc[c]);
}

// One token's inputs widened to fp32 with w = exp(max(-exp(d), -100)); returns the bonus
// r . (u * k). Eight channels at a time where dim allows (the two exps per channel are most of a
// step when done one by one).
template <class T>
float prepare_token(std::int64_t dim, const float* __restrict u, const T* r, const T* k, const T* v, const T* d,
                    float* ri, float* ki, float* vj, float* wi) {
  float8 bonus8{};
  std::int64_t i = 0;
  for (; i + kFloat8Lanes <= dim; i += kFloat8Lanes) {
    const float8 r8 = load_float8(r + i), k8 = load_float8(k + i);
    float8 g = rwkv6_log_decay(load_float8(d + i));
    g = select(g < -100.0f, broadcast_float8(-100.0f), g);
    store_float8(ri + i, r8);
    store_float8(ki + i, k8);
    store_float8(vj + i, load_float8(v + i));
    store_float8(wi + i, exp_nonpositive(g));
    bonus8 += r8 * load_float8(u + i) * k8;
  }
  float bonus = sum_lanes(bonus8);
  for (; i < dim; ++i) {
    ri[i] = to_float(r[i]);
    ki[i] = to_float(k[i]);
    vj[i] = to_float(v[i]);
    wi[i] = exp_nonpositive(log_decay(to_float(d[i])));
    bonus += ri[i] * u[i] * ki[i];
  }
  return bonus;
}

template <class T>
void recurrent_head(std::int64_t dim, const float* __restrict u, std::int64_t tokens, const T* r, const T* k,
                    const T* v, const T* d, float* __restrict S, T* out) {
  alignas(64) float ri[kMaxDim], ki[kMaxDim], vj[kMaxDim], wi[kMaxDim], o[kMaxDim];
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t row = t * dim;
    const float bonus = prepare_token(dim, u, r + row, k + row, v + row, d + row, ri, ki, vj, wi);
    // o = r^T S_{t-1} + bonus v, then S = diag(w) S + k v^T, in one pass over S.
    std::int64_t j0 = 0;
    for (; j0 + 4 * kFloat8Lanes <= dim; j0 += 4 * kFloat8Lanes) update_columns<4>(dim, j0, bonus, ri, wi, ki, vj, S, o);
    for (; j0 + kFloat8Lanes <= dim; j0 += kFloat8Lanes) update_columns<1>(dim, j0, bonus, ri, wi, ki, vj, S, o);
    if (j0 < dim) {
      for (std::int64_t j = j0; j < dim; ++j) o[j] = bonus * vj[j];
      for (std::int64_t i = 0; i < dim; ++i) {
        float* s = S + i * dim;
        for (std::int64_t j = j0; j < dim; ++j) {
          const float x = s[j];
          o[j] += ri[i] * x;
          s[j] = wi[i] * x + ki[i] * vj[j];
        }
      }
    }
    for (std::int64_t j = 0; j < dim; ++j) out[row + j] = from_float<T>(o[j]);
  }
}

// Exponents are always sums of log-decays over exactly the tokens between a pair (prefixes from a
// sub-chunk boundary, suffixes to one, running sums between two tokens), never differences of two
// long cumulative sums: B_{t-1} - B_s computed as a difference loses |B| x 2^-24 in the exponent
// (5e-4 at |B| = 6400), a relative error of that size in a weight that may be close to 1.
// KS_s = k_s * e^{sum of g over s+1 .. last} for s in [first, last] (rows of dim), walking back from
// last; leaves acc = the sum of g over first .. last.
void decay_keys_to_end(std::int64_t dim, std::int64_t first, std::int64_t last, const float* K, const float* G,
                       float* KS, float* acc) {
  std::fill(acc, acc + dim, 0.0f);
  for (std::int64_t s = last; s >= first; --s) {
    const float* Ks = K + s * dim;
    const float* Gs = G + s * dim;
    float* KSs = KS + s * dim;
#pragma omp simd
    for (std::int64_t i = 0; i < dim; ++i) {
      KSs[i] = Ks[i] * exp_nonpositive(acc[i]);
      acc[i] += Gs[i];
    }
  }
}

// A chunk whose decays sum to at most kFactorisedNats on every channel (the common case: the drawn
// inputs give about 30 nats per 64 tokens) factorises every pair weight as
// (r_t e^{B_{t-1}}) . (k_s e^{-B_s}), e^{+-B} within fp32's normal range, so the chunk is three
// register-tiled products (common/chunk_matmul.hpp) instead of sub-chunks and pairwise exps:
//   A = strictly lower (Q K~^T) + diag(r_t . (u * k_t)),  O = Q S_0 + A V,
//   S_n = diag(e^{B_{n-1}}) S_0 + (diag(e^{B_{n-1}}) K~^T) V
// with Q rows r_t e^{B_{t-1}} and K~^T [dim, n] columns k_s e^{-B_s}. e^{B_t} is the running product
// of the w_t (the rounding the recurrence does when it scales S by w_t). Returns false, having
// written nothing, when some channel's chunk decay is past the bound.
constexpr float kFactorisedNats = 80.0f;  // e^{80} = 5.5e34: |k| e^{80} stays far below FLT_MAX

template <class T>
bool factorised_chunk(std::int64_t dim, const float* __restrict u, std::int64_t n, const float* R, const float* K,
                      const float* V, const float* G, float* __restrict S, T* out, float* Q, float* KT, float* O,
                      float* A, float* e_prev, float* total) {
  std::fill(total, total + dim, 0.0f);
  for (std::int64_t t = 0; t < n; ++t) {
    const float* Gt = G + t * dim;
#pragma omp simd
    for (std::int64_t i = 0; i < dim; ++i) total[i] += Gt[i];
  }
  float lowest = 0.0f;
  for (std::int64_t i = 0; i < dim; ++i) lowest = std::min(lowest, total[i]);
  if (!(lowest >= -kFactorisedNats)) return false;

  alignas(64) float diagonal[kChunk];
  std::fill(e_prev, e_prev + dim, 1.0f);
  for (std::int64_t t = 0; t < n; ++t) {
    const float* Rt = R + t * dim;
    const float* Kt = K + t * dim;
    const float* Gt = G + t * dim;
    float* Qt = Q + t * dim;
    float bonus = 0.0f;
#pragma omp simd reduction(+ : bonus)
    for (std::int64_t i = 0; i < dim; ++i) {
      const float e = e_prev[i] * exp_nonpositive(Gt[i]);
      Qt[i] = Rt[i] * e_prev[i];
      total[i] = Kt[i] / e;  // a row buffer here: k_t e^{-B_t}
      bonus += Rt[i] * u[i] * Kt[i];
      e_prev[i] = e;
    }
    for (std::int64_t i = 0; i < dim; ++i) KT[i * kChunk + t] = total[i];
    diagonal[t] = bonus;
  }
  // e_prev holds e^{B_{n-1}}. A's strictly lower part, then its diagonal (the bonus), then zeros up
  // to n (a lower_a product reads within its row block).
  chunk_matmul(n, n, dim, Q, dim, KT, kChunk, A, kChunk, {.lower_c = true});
  for (std::int64_t t = 0; t < n; ++t) {
    A[t * kChunk + t] = diagonal[t];
    std::fill(A + t * kChunk + t + 1, A + t * kChunk + n, 0.0f);
  }
  float* dst = std::is_same_v<T, float> ? reinterpret_cast<float*>(out) : O;
  chunk_matmul(n, dim, dim, Q, dim, S, dim, dst, dim);
  chunk_matmul(n, dim, n, A, kChunk, V, dim, dst, dim, {.accumulate = true, .lower_a = true});
  if constexpr (!std::is_same_v<T, float>) {
    for (std::int64_t e = 0; e < n * dim; ++e) out[e] = from_float<T>(O[e]);
  }
  for (std::int64_t i = 0; i < dim; ++i) {
    const float decay = e_prev[i];
    float* kt = KT + i * kChunk;
#pragma omp simd
    for (std::int64_t c = 0; c < n; ++c) kt[c] *= decay;
    float* row = S + i * dim;
#pragma omp simd
    for (std::int64_t j = 0; j < dim; ++j) row[j] *= decay;
  }
  chunk_matmul(dim, dim, n, KT, kChunk, V, dim, S, dim, {.accumulate = true});
  return true;
}

template <class T>
void chunkwise_head(std::int64_t dim, const float* __restrict u, std::int64_t tokens, const T* r, const T* k,
                    const T* v, const T* d, float* __restrict S, T* out) {
  // Rows of dim floats per token of the chunk; G holds the log-decays g_t.
  alignas(64) float R[kChunk * kMaxDim], K[kChunk * kMaxDim], V[kChunk * kMaxDim], G[kChunk * kMaxDim];
  alignas(64) float Q[kChunk * kMaxDim], KS[kChunk * kMaxDim], O[kChunk * kMaxDim];
  alignas(64) float A[kChunk * kChunk];
  alignas(64) float totals[(kChunk / kSub) * kMaxDim], acc[kMaxDim], m[kMaxDim], tmp[kMaxDim];
  for (std::int64_t begin = 0; begin < tokens; begin += kChunk) {
    const std::int64_t n = std::min(kChunk, tokens - begin);
    const std::int64_t subs = (n + kSub - 1) / kSub;
    for (std::int64_t t = 0; t < n; ++t) {
      const std::int64_t src = (begin + t) * dim;
      float* Rt = R + t * dim;
      float* Kt = K + t * dim;
      float* Vt = V + t * dim;
      float* Gt = G + t * dim;
#pragma omp simd
      for (std::int64_t i = 0; i < dim; ++i) {
        Rt[i] = to_float(r[src + i]);
        Kt[i] = to_float(k[src + i]);
        Vt[i] = to_float(v[src + i]);
        Gt[i] = log_decay(to_float(d[src + i]));
      }
    }
    if (factorised_chunk(dim, u, n, R, K, V, G, S, out + begin * dim, Q, KS, O, A, m, acc)) continue;
    // Inter-chunk: o_t = (r_t * e^{P_t})^T S_0 with P_t = sum_{m<t} g_m, and the bonus term on the
    // diagonal of A.
    std::fill(acc, acc + dim, 0.0f);
    for (std::int64_t t = 0; t < n; ++t) {
      const float* Rt = R + t * dim;
      const float* Kt = K + t * dim;
      const float* Gt = G + t * dim;
      float* Ot = O + t * dim;
      float bonus = 0.0f;
#pragma omp simd reduction(+ : bonus)
      for (std::int64_t i = 0; i < dim; ++i) {
        tmp[i] = Rt[i] * exp_nonpositive(acc[i]);
        bonus += Rt[i] * u[i] * Kt[i];
        acc[i] += Gt[i];
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
    // Per sub-chunk: Q_t = r_t * e^{sum of g from the sub-chunk's start to t-1}, KS_s = k_s * e^{sum
    // of g from s+1 to the sub-chunk's end}, and the sub-chunk's total log-decay.
    for (std::int64_t I = 0; I < subs; ++I) {
      const std::int64_t first = I * kSub, last = std::min(n, first + kSub) - 1;
      std::fill(acc, acc + dim, 0.0f);
      for (std::int64_t t = first; t <= last; ++t) {
        const float* Rt = R + t * dim;
        const float* Gt = G + t * dim;
        float* Qt = Q + t * dim;
#pragma omp simd
        for (std::int64_t i = 0; i < dim; ++i) {
          Qt[i] = Rt[i] * exp_nonpositive(acc[i]);
          acc[i] += Gt[i];
        }
      }
      std::copy(acc, acc + dim, totals + I * dim);
      decay_keys_to_end(dim, first, last, K, G, KS, acc);
    }
    for (std::int64_t I = 0; I < subs; ++I) {
      const std::int64_t first = I * kSub, last = std::min(n, first + kSub) - 1;
      // Blocks below the diagonal, nearest first: m = e^{total log-decay of the sub-chunks between J and I}.
      std::fill(acc, acc + dim, 0.0f);
      for (std::int64_t J = I - 1; J >= 0; --J) {
#pragma omp simd
        for (std::int64_t i = 0; i < dim; ++i) m[i] = exp_nonpositive(acc[i]);
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
        const float* total = totals + J * dim;
#pragma omp simd
        for (std::int64_t i = 0; i < dim; ++i) acc[i] += total[i];
      }
      // The diagonal block, pair by pair: e^{sum of g over s+1 .. t-1}, a running sum per s.
      for (std::int64_t s = first; s < last; ++s) {
        const float* Ks = K + s * dim;
        std::fill(acc, acc + dim, 0.0f);
        for (std::int64_t t = s + 1; t <= last; ++t) {
          const float* Rt = R + t * dim;
          const float* Gt = G + t * dim;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (std::int64_t i = 0; i < dim; ++i) {
            dot += Rt[i] * Ks[i] * exp_nonpositive(acc[i]);
            acc[i] += Gt[i];
          }
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
    // State: S = diag(e^{sum of all g}) S + sum_s (k_s * e^{sum of g over s+1 .. n-1}) v_s^T.
    decay_keys_to_end(dim, 0, n - 1, K, G, KS, acc);
    for (std::int64_t i = 0; i < dim; ++i) {
      float* __restrict row = S + i * dim;
      const float decay = exp_nonpositive(acc[i]);
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

// Runs `head_kernel` (recurrent_head or chunkwise_head) on every (batch, head) with its bonus u, its
// inputs, state and output, in parallel over heads once the work pays for the threads.
template <class T, class HeadKernel>
void over_heads(const RwkvShape& shape, const RwkvParameters& params, std::int64_t tokens, const RwkvTokens<T>& x,
                float* state, T* out, HeadKernel head_kernel) {
  const std::int64_t dim = shape.dim;
#pragma omp parallel for schedule(static) if (shape.batch_heads * dim * dim * tokens >= kRwkvParallelWork)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    const HeadPointers<T> p = head(shape, tokens, x, out, bh);
    head_kernel(dim, params.u + (bh % shape.heads) * dim, tokens, p.r, p.k, p.v, p.d, state + bh * dim * dim, p.out);
  }
}

}  // namespace

#if defined(ARCH_BENCH_KERNEL_DISPATCHER)  // not a kernel: compiled once, with the dispatched forms
double rwkv6_factorised_chunk_flops(std::int64_t n_, std::int64_t dim_) {
  const double n = static_cast<double>(n_), d = static_cast<double>(dim_);
  const double strict = n * (n - 1) / 2;
  return n * d * 4                 // load: log-decay (exp, max)
         + n * d * 8               // chunk total, e^{B} (exp, mul), Q, K~ (div), bonus (3)
         + 2 * strict * d          // A = Q K~^T, strictly lower
         + 2 * n * d * d           // Q S_0
         + 2 * (strict + n) * d    // A V
         + n * d + d * d           // decay of K~ and S
         + 2 * n * d * d;          // S += K~^T V
}
#endif

#if defined(ARCH_BENCH_KERNEL_DISPATCHER)  // not a kernel: compiled once, with the dispatched forms
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
#endif

template <class T, KernelVariant V>
void rwkv6_recurrent(const RwkvShape& shape, const RwkvParameters& params, std::int64_t tokens,
                     const RwkvTokens<T>& x, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (rwkv6_recurrent<T, W>(shape, params, tokens, x, state, out)))
  over_heads(shape, params, tokens, x, state, out, [](auto... args) { recurrent_head(args...); });
}

template <class T, KernelVariant V>
void rwkv6_prefill_chunkwise(const RwkvShape& shape, const RwkvParameters& params, std::int64_t tokens,
                             const RwkvTokens<T>& x, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (rwkv6_prefill_chunkwise<T, W>(shape, params, tokens, x, state, out)))
  over_heads(shape, params, tokens, x, state, out, [](auto... args) { chunkwise_head(args...); });
}

#define ARCH_BENCH_RWKV6_KERNELS(PREFIX, T, V)                                                                   \
  PREFIX void rwkv6_recurrent<T, V>(const RwkvShape&, const RwkvParameters&, std::int64_t, const RwkvTokens<T>&, \
                                   float*, T*);                                                                  \
  PREFIX void rwkv6_prefill_chunkwise<T, V>(const RwkvShape&, const RwkvParameters&, std::int64_t,               \
                                           const RwkvTokens<T>&, float*, T*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_RWKV6_KERNELS)

}  // namespace arch_bench
