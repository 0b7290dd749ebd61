#include "mechanisms/rwkv/rwkv4/cpu.hpp"

#include <algorithm>
#include <cmath>

#include "core/bf16.hpp"
#include "mechanisms/common/kernel_variant.hpp"

namespace arch_bench {

namespace {

// One token for the dim channels of one head. Of the two exponentials of each max-subtracted
// pair, one is e^0 = 1: a single exp(-|x - y|) and a select give both, halving the exp count.
template <class T>
inline void step_head(std::int64_t dim, const float* __restrict w, const float* __restrict u, const T* __restrict k,
                      const T* __restrict v, float* __restrict a, float* __restrict b, float* __restrict p,
                      T* __restrict out) {
#pragma omp simd
  for (std::int64_t j = 0; j < dim; ++j) {
    const float kj = to_float(k[j]), vj = to_float(v[j]);
    const float aj = a[j], bj = b[j], pj = p[j];
    // wkv_t = (e^{p} a + e^{u+k} v) / (e^{p} b + e^{u+k}), both terms relative to max(p, u + k).
    const float ww = u[j] + kj;
    const float d1 = pj - ww;
    const float x1 = exp_nonpositive(-std::fabs(d1));
    const float e1 = d1 >= 0.0f ? 1.0f : x1, e2 = d1 >= 0.0f ? x1 : 1.0f;
    out[j] = from_float<T>((e1 * aj + e2 * vj) / (e1 * bj + e2));
    // (a, b) <- e^{-w} (a, b) + e^{k} (v, 1), relative to the new max(p - w, k).
    const float decayed = pj - w[j];
    const float d2 = decayed - kj;
    const float x2 = exp_nonpositive(-std::fabs(d2));
    const float f1 = d2 >= 0.0f ? 1.0f : x2, f2 = d2 >= 0.0f ? x2 : 1.0f;
    a[j] = f1 * aj + f2 * vj;
    b[j] = f1 * bj + f2;
    p[j] = std::max(decayed, kj);
  }
}

template <class T>
void run_head(const RwkvShape& shape, const RwkvParameters& params, std::int64_t bh, std::int64_t tokens,
              const T* k, const T* v, float* state, T* out) {
  const std::int64_t dim = shape.dim;
  const float* w = params.w + (bh % shape.heads) * dim;
  const float* u = params.u + (bh % shape.heads) * dim;
  float* a = state + bh * 3 * dim;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t row = (bh * tokens + t) * dim;
    step_head(dim, w, u, k + row, v + row, a, a + dim, a + 2 * dim, out + row);
  }
}

// Channels (batch x heads x dim) from which a decode step is split over the team. One channel's
// update is two exps, a divide and a few multiply-adds on three floats, so the step is short: at
// 8 heads x 64, 0.74-0.94 us on one thread, against 0.80-1.14 us split while the team answered in
// 0.6-0.8 us and 2.0-2.8 us in the host's spells when it answered in 1.4-1.8 (results/shared-host-probes.md, "Team
// latency"). At 64 heads the split won by 17% in the first case and lost 9% in the second.
constexpr std::int64_t kRwkv4ParallelChannels = 4096;

}  // namespace

#if defined(ARCH_BENCH_KERNEL_DISPATCHER)  // not a kernel: compiled once, with the dispatched forms
void rwkv4_reset_state(const RwkvShape& shape, float* state) {
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    float* s = state + bh * 3 * shape.dim;
    std::fill(s, s + 2 * shape.dim, 0.0f);
    std::fill(s + 2 * shape.dim, s + 3 * shape.dim, -1e38f);
  }
}
#endif

template <class T, KernelVariant V>
void rwkv4_decode_step(const RwkvShape& shape, const RwkvParameters& params, const T* k, const T* v, float* state,
                       T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (rwkv4_decode_step<T, W>(shape, params, k, v, state, out)))
#pragma omp parallel for schedule(static) if (shape.batch_heads * shape.dim >= kRwkv4ParallelChannels)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) run_head(shape, params, bh, 1, k, v, state, out);
}

template <class T, KernelVariant V>
void rwkv4_prefill(const RwkvShape& shape, const RwkvParameters& params, std::int64_t tokens, const T* k,
                   const T* v, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (rwkv4_prefill<T, W>(shape, params, tokens, k, v, state, out)))
#pragma omp parallel for schedule(static) if (shape.batch_heads * shape.dim * tokens >= kRwkvParallelWork / 8)
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) run_head(shape, params, bh, tokens, k, v, state, out);
}

#define ARCH_BENCH_RWKV4_KERNELS(PREFIX, T, V)                                                                       \
  PREFIX void rwkv4_decode_step<T, V>(const RwkvShape&, const RwkvParameters&, const T*, const T*, float*, T*);      \
  PREFIX void rwkv4_prefill<T, V>(const RwkvShape&, const RwkvParameters&, std::int64_t, const T*, const T*, float*, \
                                 T*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_RWKV4_KERNELS)

}  // namespace arch_bench
