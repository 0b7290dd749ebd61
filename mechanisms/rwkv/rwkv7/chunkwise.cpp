// RWKV-7's chunkwise prefill in the WY/UT form (the derivation is in rwkv7/cpu.hpp).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/bf16.hpp"
#include "mechanisms/rwkv/rwkv7/cpu.hpp"
#include "mechanisms/common/chunk_matmul.hpp"
#include "mechanisms/common/kernel_variant.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kChunk = kRwkv7Chunk, kMaxDim = kRwkvMaxDim;

// |log w| <= e^{-0.5} per token, so a chunk's cumulative log-decay stays within kChunk e^{-0.5} nats:
// both e^{G} and e^{-G} are normal fp32 numbers (|G| < 87) and the factorised pair weights
// e^{G_{t-1}} e^{-G_s} never overflow or underflow.
static_assert(kChunk * 0.60653066 < 80.0, "rwkv7's chunk is too long for the factorised decays");

// One head's chunk buffers, on the thread's stack (240 KiB: sized for kRwkvMaxDim and kChunk = 32).
struct ChunkBuffers {
  alignas(64) float ar[2 * kChunk * kMaxDim];      // rows [0, n): a_t e^{G_{t-1}}; rows [n, 2n): r_t e^{G_t}
  alignas(64) float bk_t[kMaxDim * 2 * kChunk];    // [dim, 2 kChunk]: columns [0, n) b_s e^{-G_s}, [n, 2n) k_s e^{-G_s}
  alignas(64) float uv[2 * kChunk * kMaxDim];      // rows [0, n): U (the removed values S_{t-1} a_t); [n, 2n): V
  alignas(64) float o[kChunk * kMaxDim];           // outputs [n, dim] (bf16 storage)
  alignas(64) float scores[4][kChunk * kChunk];    // A_ab, A_ak (strictly lower), Q_rb, Q_rk (lower)
  alignas(64) float e_prev[kMaxDim];               // e^{G_{t-1}}, then e^{G_t}, per key channel
  alignas(64) float b_row[kMaxDim], k_row[kMaxDim];  // b_t e^{-G_t}, k_t e^{-G_t}
};

enum Score { kAb, kAk, kRb, kRk };

// Zeroes row t of a [n, n] score block (leading dimension kChunk) from column `from` on: what lies
// above the diagonal after a lower_c product, which a lower_a product reads within its row block.
void clear_upper(std::int64_t n, float* block, bool strict) {
  for (std::int64_t t = 0; t < n; ++t) {
    const std::int64_t from = strict ? t : t + 1;
    std::fill(block + t * kChunk + from, block + t * kChunk + n, 0.0f);
  }
}

// U = (I - A_ab)^{-1} X in place (rows of `u`, X on entry): u_t = x_t + sum_{s<t} A_ab[t][s] u_s, row by
// row, each row's columns in registers 64 floats at a time.
void forward_substitute(std::int64_t n, std::int64_t dim, const float* a_ab, float* u) {
  using detail::kLanes;
  using vf = detail::vfloat;
  constexpr int kVectors = 64 / kLanes;
  std::int64_t j = 0;
  for (; j + kVectors * kLanes <= dim; j += kVectors * kLanes) {
    for (std::int64_t t = 1; t < n; ++t) {
      vf acc[kVectors];
      float* ut = u + t * dim + j;
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) acc[v] = *reinterpret_cast<const vf*>(ut + v * kLanes);
      const float* a = a_ab + t * kChunk;
      for (std::int64_t s = 0; s < t; ++s) {
        const float x = a[s];
        const float* us = u + s * dim + j;
#pragma GCC unroll 8
        for (int v = 0; v < kVectors; ++v) acc[v] += x * *reinterpret_cast<const vf*>(us + v * kLanes);
      }
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) *reinterpret_cast<vf*>(ut + v * kLanes) = acc[v];
    }
  }
  if (j == dim) return;
  for (std::int64_t t = 1; t < n; ++t) {
    float* ut = u + t * dim;
    const float* a = a_ab + t * kChunk;
    for (std::int64_t s = 0; s < t; ++s) {
      const float x = a[s];
      const float* us = u + s * dim;
#pragma omp simd
      for (std::int64_t c = j; c < dim; ++c) ut[c] += x * us[c];
    }
  }
}

template <class T>
void prefill_head(std::int64_t dim, std::int64_t tokens, const T* r, const T* w_raw, const T* k, const T* v,
                  const T* kappa, const T* iclr, float* H, T* out, ChunkBuffers& w) {
  constexpr std::int64_t ldbk = 2 * kChunk;
  for (std::int64_t begin = 0; begin < tokens; begin += kChunk) {
    const std::int64_t n = std::min(kChunk, tokens - begin);
    float* hat_a = w.ar;
    float* hat_r = w.ar + n * dim;
    float* U = w.uv;
    float* V = w.uv + n * dim;
    // e^{G_t} as the running product of w over the chunk's tokens (the rounding the recurrence itself
    // does when it multiplies its state by w_t), e^{-G_t} its reciprocal; e^{G_{-1}} = 1.
    std::fill(w.e_prev, w.e_prev + dim, 1.0f);
    for (std::int64_t t = 0; t < n; ++t) {
      const std::int64_t src = (begin + t) * dim;
      float* at = hat_a + t * dim;
      float* rt = hat_r + t * dim;
      float* vt = V + t * dim;
#pragma omp simd
      for (std::int64_t j = 0; j < dim; ++j) {
        const float e = w.e_prev[j] * exp_nonpositive(rwkv7_log_decay(to_float(w_raw[src + j])));
        const float inverse = 1.0f / e;
        const float kap = to_float(kappa[src + j]);
        at[j] = -kap * w.e_prev[j];
        rt[j] = to_float(r[src + j]) * e;
        vt[j] = to_float(v[src + j]);
        w.b_row[j] = kap * to_float(iclr[src + j]) * inverse;
        w.k_row[j] = to_float(k[src + j]) * inverse;
        w.e_prev[j] = e;
      }
      for (std::int64_t j = 0; j < dim; ++j) {
        w.bk_t[j * ldbk + t] = w.b_row[j];
        w.bk_t[j * ldbk + n + t] = w.k_row[j];
      }
    }
    // e_prev now holds e^{G_{n-1}}, the whole chunk's decay.
    const float* e_end = w.e_prev;

    // The four pair-weight blocks [t][s] = x_t . y_s, x in {a e^{G_{t-1}}, r e^{G_t}}, y in
    // {b e^{-G_s}, k e^{-G_s}}: sum_j x_tj y_sj e^{G_{t-1,j} - G_{s,j}} (or G_t), the decay between s and t.
    chunk_matmul(n, n, dim, hat_a, dim, w.bk_t, ldbk, w.scores[kAb], kChunk, {.lower_c = true});
    chunk_matmul(n, n, dim, hat_a, dim, w.bk_t + n, ldbk, w.scores[kAk], kChunk, {.lower_c = true});
    chunk_matmul(n, n, dim, hat_r, dim, w.bk_t, ldbk, w.scores[kRb], kChunk, {.lower_c = true});
    chunk_matmul(n, n, dim, hat_r, dim, w.bk_t + n, ldbk, w.scores[kRk], kChunk, {.lower_c = true});
    clear_upper(n, w.scores[kAb], true);
    clear_upper(n, w.scores[kAk], true);
    clear_upper(n, w.scores[kRb], false);
    clear_upper(n, w.scores[kRk], false);

    // U: u_t = a_t^T H_{t-1} = (a_t e^{G_{t-1}})^T H_0 + sum_{s<t} A_ab[t][s] u_s + A_ak[t][s] v_s.
    chunk_matmul(n, dim, dim, hat_a, dim, H, dim, U, dim);
    chunk_matmul(n, dim, n, w.scores[kAk], kChunk, V, dim, U, dim, {.accumulate = true, .lower_a = true});
    forward_substitute(n, dim, w.scores[kAb], U);

    // O: o_t = (r_t e^{G_t})^T H_0 + sum_{s<=t} Q_rb[t][s] u_s + Q_rk[t][s] v_s.
    // fp32 storage takes the products straight into `out`; bf16 goes through the fp32 buffer.
    float* O = std::is_same_v<T, float> ? reinterpret_cast<float*>(out + begin * dim) : w.o;
    chunk_matmul(n, dim, dim, hat_r, dim, H, dim, O, dim);
    chunk_matmul(n, dim, n, w.scores[kRb], kChunk, U, dim, O, dim, {.accumulate = true, .lower_a = true});
    chunk_matmul(n, dim, n, w.scores[kRk], kChunk, V, dim, O, dim, {.accumulate = true, .lower_a = true});
    if constexpr (!std::is_same_v<T, float>) {
      for (std::int64_t e = 0; e < n * dim; ++e) out[begin * dim + e] = from_float<T>(w.o[e]);
    }

    // H_n = diag(e^{G_{n-1}}) H_0 + sum_s (b_s e^{G_{n-1} - G_s}) u_s^T + (k_s e^{G_{n-1} - G_s}) v_s^T:
    // the rows of bk_t scaled by e^{G_{n-1}}, then one product over the 2n stacked tokens.
    for (std::int64_t j = 0; j < dim; ++j) {
      const float e = e_end[j];
      float* bk = w.bk_t + j * ldbk;
#pragma omp simd
      for (std::int64_t c = 0; c < 2 * n; ++c) bk[c] *= e;
      float* h = H + j * dim;
#pragma omp simd
      for (std::int64_t c = 0; c < dim; ++c) h[c] *= e;
    }
    chunk_matmul(dim, dim, 2 * n, w.bk_t, ldbk, w.uv, dim, H, dim, {.accumulate = true});
  }
}

}  // namespace

template <class T, KernelVariant V>
void rwkv7_prefill_chunkwise(const RwkvShape& shape, std::int64_t tokens, const RwkvTokens<T>& x, float* state,
                             T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (rwkv7_prefill_chunkwise<T, W>(shape, tokens, x, state, out)))
  const std::int64_t dim = shape.dim;
#pragma omp parallel if (shape.batch_heads * dim * dim * tokens >= kRwkvParallelWork)
  {
    ChunkBuffers buffers;  // one set per thread, reused for every head it takes
#pragma omp for schedule(static)
    for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
      const std::int64_t o = bh * tokens * dim;
      prefill_head(dim, tokens, x.r + o, x.decay + o, x.k + o, x.v + o, x.kappa + o, x.iclr + o,
                   state + bh * dim * dim, out + o, buffers);
    }
  }
}

#define ARCH_BENCH_RWKV7_CHUNKWISE_KERNELS(PREFIX, T, V)                                                       \
  PREFIX void rwkv7_prefill_chunkwise<T, V>(const RwkvShape&, std::int64_t, const RwkvTokens<T>&, float*, T*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_RWKV7_CHUNKWISE_KERNELS)

}  // namespace arch_bench
