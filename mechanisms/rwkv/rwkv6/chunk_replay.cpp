#include "mechanisms/rwkv/rwkv6/chunk_replay.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_plan.hpp"

namespace arch_bench {

namespace {

constexpr int kC = kRwkv6ChunkTokens;

float bf(float x) { return round_through<bf16>(x); }

// log w = max(-exp(d), -100), in fp32 as the kernels compute it.
float log_decay(float d) { return std::max(-std::exp(d), -100.0f); }

}  // namespace

void rwkv6_chunk_replay(int dim, std::int64_t tokens, const float* r, const float* k, const float* v, const float* d,
                        const float* u, float* state, float* out, Rwkv6ChunkFault fault) {
  const std::size_t D = static_cast<std::size_t>(dim);
  std::vector<float> b(kC * D), k_decayed(kC * D), r_decayed(kC * D), s_in(D * D), p(kC * kC), vc(kC * D);
  for (std::int64_t first = 0; first < tokens; first += kC) {
    const int rows = static_cast<int>(std::min<std::int64_t>(kC, tokens - first));
    // Rows past the sequence: k = v = r = 0 and log w = 0 (b flat), as the kernels' zero padding.
    auto at = [&](const float* x, int m, std::size_t c) { return m < rows ? x[(first + m) * dim + c] : 0.0f; };
    for (std::size_t c = 0; c < D; ++c) {
      float running = 0.0f;
      for (int m = 0; m < kC; ++m) {
        running += m < rows ? log_decay(d[(first + m) * dim + c]) : 0.0f;
        b[m * D + c] = running;
      }
    }
    for (int m = 0; m < kC; ++m) {
      for (std::size_t c = 0; c < D; ++c) vc[m * D + c] = at(v, m, c);
    }
    // Kernel (2): the state entering this chunk, bf16.
    for (std::size_t e = 0; e < D * D; ++e) s_in[e] = bf(state[e]);

    // Kernel (3): pairwise scores, R~, O = P V + R~ S_in.
    const bool shifted = fault == Rwkv6ChunkFault::decay_off_by_one;
    auto before = [&](int t, std::size_t c) {  // b_{t-1} (b_t for the faulty replay)
      if (shifted) return b[t * D + c];
      return t > 0 ? b[(t - 1) * D + c] : 0.0f;
    };
    for (int t = 0; t < kC; ++t) {
      for (int s = 0; s < kC; ++s) {
        float a = 0.0f;
        if (s < t) {
          for (std::size_t c = 0; c < D; ++c) a += at(r, t, c) * at(k, s, c) * std::exp(before(t, c) - b[s * D + c]);
        } else if (s == t && fault != Rwkv6ChunkFault::bonus_dropped) {
          for (std::size_t c = 0; c < D; ++c) a += at(r, t, c) * u[c] * at(k, t, c);
        }
        p[t * kC + s] = bf(a);
      }
      for (std::size_t c = 0; c < D; ++c) r_decayed[t * D + c] = bf(at(r, t, c) * std::exp(before(t, c)));
    }
    for (int t = 0; t < rows; ++t) {
      for (std::size_t j = 0; j < D; ++j) {
        float o = 0.0f;
        for (int s = 0; s <= t; ++s) o += p[t * kC + s] * vc[s * D + j];
        for (std::size_t i = 0; i < D; ++i) o += r_decayed[t * D + i] * s_in[i * D + j];
        out[(first + t) * dim + j] = bf(o);
      }
    }

    // Kernel (1): K~ = bf16(k . exp(b_last - b_s)), U = K~^T V rounded to bf16; kernel (2) carries
    // S = diag(exp(b_last)) S + U in fp32.
    const float* b_last = b.data() + (kC - 1) * D;
    for (int m = 0; m < kC; ++m) {
      for (std::size_t c = 0; c < D; ++c) k_decayed[m * D + c] = bf(at(k, m, c) * std::exp(b_last[c] - b[m * D + c]));
    }
    for (std::size_t i = 0; i < D; ++i) {
      const float carry = std::exp(b_last[i]);
      for (std::size_t j = 0; j < D; ++j) {
        float uij = 0.0f;
        for (int m = 0; m < kC; ++m) uij += k_decayed[m * D + i] * vc[m * D + j];
        state[i * D + j] = std::fma(carry, state[i * D + j], bf(uij));
      }
    }
  }
}

}  // namespace arch_bench
