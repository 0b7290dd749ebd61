#include "mechanisms/rwkv/rwkv7/cpu.hpp"

#include "mechanisms/common/bf16.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = kRwkvMaxDim;

template <class T>
void recurrent_head(std::int64_t dim, std::int64_t tokens, const T* r, const T* w_raw, const T* k, const T* v,
                    const T* kappa, const T* iclr, float* __restrict S, T* out) {
  alignas(64) float rj[kMaxDim], wj[kMaxDim], kj[kMaxDim], aj[kMaxDim], bj[kMaxDim];
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t row = t * dim;
#pragma omp simd
    for (std::int64_t j = 0; j < dim; ++j) {
      rj[j] = to_float(r[row + j]);
      kj[j] = to_float(k[row + j]);
      wj[j] = exp_nonpositive(rwkv7_log_decay(to_float(w_raw[row + j])));
      const float kap = to_float(kappa[row + j]);
      aj[j] = -kap;
      bj[j] = kap * to_float(iclr[row + j]);
    }
    // Row i of S: S_i <- S_i diag(w) + (S_i . a) b + v_i k, and o_i = S_i . r.
    for (std::int64_t i = 0; i < dim; ++i) {
      float* __restrict s = S + i * dim;
      float sa = 0.0f;
#pragma omp simd reduction(+ : sa)
      for (std::int64_t j = 0; j < dim; ++j) sa += s[j] * aj[j];
      const float vi = to_float(v[row + i]);
      float o = 0.0f;
#pragma omp simd reduction(+ : o)
      for (std::int64_t j = 0; j < dim; ++j) {
        const float x = s[j] * wj[j] + sa * bj[j] + vi * kj[j];
        s[j] = x;
        o += x * rj[j];
      }
      out[row + i] = from_float<T>(o);
    }
  }
}

}  // namespace

template <class T>
void rwkv7_recurrent(const RwkvShape& shape, std::int64_t tokens, const RwkvTokens<T>& x, float* state, T* out) {
  const std::int64_t dim = shape.dim;
#pragma omp parallel for schedule(static) if (shape.batch_heads * dim * dim * tokens >= kRwkvParallelWork)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    const std::int64_t o = bh * tokens * dim;
    recurrent_head(dim, tokens, x.r + o, x.decay + o, x.k + o, x.v + o, x.kappa + o, x.iclr + o,
                   state + bh * dim * dim, out + o);
  }
}

template void rwkv7_recurrent<float>(const RwkvShape&, std::int64_t, const RwkvTokens<float>&, float*, float*);
template void rwkv7_recurrent<bf16>(const RwkvShape&, std::int64_t, const RwkvTokens<bf16>&, float*, bf16*);

}  // namespace arch_bench
