#include "mechanisms/rwkv/rwkv7/chunk_replay.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/rwkv/kernels.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_plan.hpp"

namespace arch_bench {

namespace {

constexpr int kC = kRwkv7ChunkTokens;

float bf(float x) { return round_through<bf16>(x); }

// w = exp(-e^{-0.5} sigmoid(w_raw)) in fp32, as the kernels (and rwkv7/cuda.cu) compute it.
float decay_of(float w_raw) { return std::exp(-kRwkv7DecayScale / (1.0f + std::exp(-w_raw))); }

}  // namespace

void rwkv7_chunk_replay(int dim, std::int64_t tokens, const float* r, const float* w_raw, const float* k,
                        const float* v, const float* kappa, const float* iclr, float* state, float* out,
                        Rwkv7ChunkFault fault) {
  const std::size_t D = static_cast<std::size_t>(dim);
  std::vector<float> e(kC * D), xa(kC * D), xr(kC * D), yb(kC * D), yk(kC * D), vc(kC * D), bt(kC * D), kt(kC * D);
  std::vector<float> a_ab(kC * kC), a_ak(kC * kC), p_rb(kC * kC), p_rk(kC * kC), t_bf(kC * kC), m_bf(kC * kC);
  std::vector<float> w(kC * D), s_op(D * D), u(kC * D);
  for (std::int64_t first = 0; first < tokens; first += kC) {
    const int rows = static_cast<int>(std::min<std::int64_t>(kC, tokens - first));
    // Rows past the sequence: every input 0 and w = 1 (e stays flat), as the kernels' zero padding.
    auto at = [&](const float* x, int m, std::size_t c) { return m < rows ? x[(first + m) * dim + c] : 0.0f; };
    for (std::size_t c = 0; c < D; ++c) {
      float running = 1.0f;
      for (int m = 0; m < kC; ++m) {
        if (m < rows) running *= decay_of(w_raw[(first + m) * dim + c]);
        e[m * D + c] = running;
      }
    }
    const float* e_last = e.data() + (kC - 1) * D;
    for (int m = 0; m < kC; ++m) {
      for (std::size_t c = 0; c < D; ++c) {
        const float et = e[m * D + c], before = m > 0 ? e[(m - 1) * D + c] : 1.0f;
        const float kap = at(kappa, m, c);
        const float b = fault == Rwkv7ChunkFault::delta_dropped ? 0.0f : kap * at(iclr, m, c);
        const float kk = at(k, m, c), to_last = e_last[c] / et;
        xa[m * D + c] = bf(-kap * (fault == Rwkv7ChunkFault::decay_off_by_one ? et : before));
        xr[m * D + c] = bf(at(r, m, c) * et);
        yb[m * D + c] = bf(b / et);
        yk[m * D + c] = bf(kk / et);
        vc[m * D + c] = at(v, m, c);
        bt[m * D + c] = bf(b * to_last);
        kt[m * D + c] = bf(kk * to_last);
      }
    }
    // Prepare: the score blocks (fp32 sums of bf16 products), masked.
    for (int t = 0; t < kC; ++t) {
      for (int s = 0; s < kC; ++s) {
        float ab = 0, ak = 0, rb = 0, rk = 0;
        for (std::size_t c = 0; c < D; ++c) {
          ab += xa[t * D + c] * yb[s * D + c];
          ak += xa[t * D + c] * yk[s * D + c];
          rb += xr[t * D + c] * yb[s * D + c];
          rk += xr[t * D + c] * yk[s * D + c];
        }
        a_ab[t * kC + s] = s < t ? ab : 0.0f;
        a_ak[t * kC + s] = s < t ? ak : 0.0f;
        p_rb[t * kC + s] = bf(s <= t ? rb : 0.0f);
        p_rk[t * kC + s] = bf(s <= t ? rk : 0.0f);
      }
    }
    // [T | M] = (I - A_ab)^{-1} [I | A_ak] by forward substitution in fp32, column by column.
    for (int c = 0; c < 2 * kC; ++c) {
      float x[kC];
      for (int i = 0; i < kC; ++i) {
        float sum = c < kC ? (i == c ? 1.0f : 0.0f) : a_ak[i * kC + (c - kC)];
        for (int j = 0; j < i; ++j) sum += a_ab[i * kC + j] * x[j];
        x[i] = sum;
        (c < kC ? t_bf[i * kC + c] : m_bf[i * kC + (c - kC)]) = bf(sum);
      }
    }
    // W = T A^.
    for (int t = 0; t < kC; ++t) {
      for (std::size_t c = 0; c < D; ++c) {
        float ws = 0;
        for (int s = 0; s < kC; ++s) ws += t_bf[t * kC + s] * xa[s * D + c];
        w[t * D + c] = bf(ws);
      }
    }
    // Pass: U = W H_0 + M V, O = R^ H_0 + P_rb U + P_rk V, H = diag(e_last) H_0 + B~^T U + K~^T V.
    for (std::size_t e2 = 0; e2 < D * D; ++e2) s_op[e2] = bf(state[e2]);
    for (int t = 0; t < kC; ++t) {
      for (std::size_t i = 0; i < D; ++i) {
        float sum = 0;
        for (std::size_t j = 0; j < D; ++j) sum += w[t * D + j] * s_op[j * D + i];
        for (int s = 0; s < t; ++s) sum += m_bf[t * kC + s] * vc[s * D + i];
        u[t * D + i] = bf(sum);
      }
    }
    for (int t = 0; t < rows; ++t) {
      for (std::size_t i = 0; i < D; ++i) {
        float sum = 0;
        for (std::size_t j = 0; j < D; ++j) sum += xr[t * D + j] * s_op[j * D + i];
        for (int s = 0; s <= t; ++s) sum += p_rb[t * kC + s] * u[s * D + i] + p_rk[t * kC + s] * vc[s * D + i];
        out[(first + t) * dim + i] = bf(sum);
      }
    }
    for (std::size_t j = 0; j < D; ++j) {
      for (std::size_t i = 0; i < D; ++i) {
        float h = e_last[j] * state[j * D + i];
        for (int s = 0; s < kC; ++s) h += bt[s * D + j] * u[s * D + i] + kt[s * D + j] * vc[s * D + i];
        state[j * D + i] = h;
      }
    }
  }
}

}  // namespace arch_bench
