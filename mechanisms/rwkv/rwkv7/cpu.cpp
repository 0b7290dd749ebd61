#include "mechanisms/rwkv/rwkv7/cpu.hpp"

#include "mechanisms/common/bf16.hpp"
#include "mechanisms/common/float8.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/common/wide_vector.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = kRwkvMaxDim;

// One token's per-channel inputs widened to fp32, with the decay w = exp(-e^-0.5 sigmoid(w_raw)),
// a = -kappa and b = kappa * iclr (8 channels at a time when dim allows: two exps and a division per
// channel are most of a step when done one by one).
template <class T>
void prepare_token(std::int64_t dim, std::int64_t row, const T* r, const T* w_raw, const T* k, const T* kappa,
                   const T* iclr, float* rj, float* wj, float* kj, float* aj, float* bj) {
  std::int64_t j = 0;
  for (; j + kFloat8Lanes <= dim; j += kFloat8Lanes) {
    const float8 log_decay = rwkv7_log_decay(load_float8(w_raw + row + j));
    const float8 kap = load_float8(kappa + row + j);
    store_float8(rj + j, load_float8(r + row + j));
    store_float8(kj + j, load_float8(k + row + j));
    store_float8(wj + j, exp_nonpositive(log_decay));
    store_float8(aj + j, -kap);
    store_float8(bj + j, kap * load_float8(iclr + row + j));
  }
  for (; j < dim; ++j) {
    rj[j] = to_float(r[row + j]);
    kj[j] = to_float(k[row + j]);
    wj[j] = exp_nonpositive(rwkv7_log_decay(to_float(w_raw[row + j])));
    const float kap = to_float(kappa[row + j]);
    aj[j] = -kap;
    bj[j] = kap * to_float(iclr[row + j]);
  }
}

// Rows [i0, i0 + 8) of S: S_i <- S_i diag(w) + (S_i . a) b + v_i k, and o_i = S_i . r, for dim a
// multiple of V's lanes (V = wide_vector, a zmm with AVX-512, or float8). Eight rows at once so that
// the two dot products per row are eight independent FMA chains finished by one horizontal-add tree
// (a row at a time is a chain of dependent reductions: about 3x slower), and each slice of w, b, k,
// r is loaded once for the eight rows.
template <class V>
inline void update_rows(std::int64_t dim, std::int64_t i0, float* __restrict S, const float* vi, const float* wj,
                        const float* kj, const float* aj, const float* bj, const float* rj, float* o) {
  constexpr int kRows = 8;
  constexpr std::int64_t kLanes = sizeof(V) / sizeof(float);
  float* s = S + i0 * dim;
  alignas(32) float partial[kRows * kFloat8Lanes];
  alignas(32) float sa[kRows];
  // The eight rows' partial sums, folded to float8 (wide_vector.hpp) and summed eight at a time.
  auto finish = [&](const V (&acc)[kRows], float* sums) {
    for (int r = 0; r < kRows; ++r) store_float8(partial + r * kFloat8Lanes, fold_to_float8(acc[r]));
    sum_lanes(kRows, partial, sums);
  };
  V acc[kRows] = {};
  for (std::int64_t j = 0; j < dim; j += kLanes) {
    const V a = load_lanes<V>(aj + j);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) acc[r] += load_lanes<V>(s + r * dim + j) * a;
  }
  finish(acc, sa);
  for (int r = 0; r < kRows; ++r) acc[r] = V{};
  for (std::int64_t j = 0; j < dim; j += kLanes) {
    const V w = load_lanes<V>(wj + j), b = load_lanes<V>(bj + j), k = load_lanes<V>(kj + j), rr = load_lanes<V>(rj + j);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      float* row = s + r * dim + j;
      const V x = load_lanes<V>(row) * w + sa[r] * b + vi[i0 + r] * k;
      store_lanes(row, x);
      acc[r] += x * rr;
    }
  }
  finish(acc, o + i0);
}

template <class T>
void recurrent_head(std::int64_t dim, std::int64_t tokens, const T* r, const T* w_raw, const T* k, const T* v,
                    const T* kappa, const T* iclr, float* __restrict S, T* out) {
  alignas(64) float rj[kMaxDim], wj[kMaxDim], kj[kMaxDim], aj[kMaxDim], bj[kMaxDim], vi[kMaxDim], o[kMaxDim];
  // Rows take the widest vector whose lanes divide dim (the rows of eight need dim % 8 == 0 too).
  const bool wide_rows = dim % kWideLanes == 0;
  const bool vector_rows = dim % kFloat8Lanes == 0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t row = t * dim;
    prepare_token(dim, row, r, w_raw, k, kappa, iclr, rj, wj, kj, aj, bj);
    for (std::int64_t i = 0; i < dim; ++i) vi[i] = to_float(v[row + i]);
    if (vector_rows) {
      for (std::int64_t i0 = 0; i0 < dim; i0 += kFloat8Lanes) {
        if (wide_rows) {
          update_rows<wide_vector>(dim, i0, S, vi, wj, kj, aj, bj, rj, o);
        } else {
          update_rows<float8>(dim, i0, S, vi, wj, kj, aj, bj, rj, o);
        }
      }
    } else {
      for (std::int64_t i = 0; i < dim; ++i) {
        float* __restrict s = S + i * dim;
        float sa = 0.0f;
        for (std::int64_t j = 0; j < dim; ++j) sa += s[j] * aj[j];
        float dot = 0.0f;
        for (std::int64_t j = 0; j < dim; ++j) {
          const float x = s[j] * wj[j] + sa * bj[j] + vi[i] * kj[j];
          s[j] = x;
          dot += x * rj[j];
        }
        o[i] = dot;
      }
    }
    for (std::int64_t i = 0; i < dim; ++i) out[row + i] = from_float<T>(o[i]);
  }
}

}  // namespace

template <class T, KernelVariant V>
void rwkv7_recurrent(const RwkvShape& shape, std::int64_t tokens, const RwkvTokens<T>& x, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (rwkv7_recurrent<T, W>(shape, tokens, x, state, out)))
  const std::int64_t dim = shape.dim;
#pragma omp parallel for schedule(static) if (shape.batch_heads * dim * dim * tokens >= kRwkvParallelWork)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    const std::int64_t o = bh * tokens * dim;
    recurrent_head(dim, tokens, x.r + o, x.decay + o, x.k + o, x.v + o, x.kappa + o, x.iclr + o,
                   state + bh * dim * dim, out + o);
  }
}

#define ARCH_BENCH_RWKV7_RECURRENT_KERNELS(PREFIX, T, V)                                               \
  PREFIX void rwkv7_recurrent<T, V>(const RwkvShape&, std::int64_t, const RwkvTokens<T>&, float*, T*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_RWKV7_RECURRENT_KERNELS)

}  // namespace arch_bench
