#include "mechanisms/rwkv/rwkv6/chunk_replay.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_plan.hpp"

namespace arch_bench {

namespace {

constexpr int kC = kRwkv6ChunkTokens, kSub = kRwkv6ChunkSubTokens, kSubs = kRwkv6ChunkSubs;

float bf(float x) { return round_through<bf16>(x); }

// log w = max(-exp(d), -100), in fp32 as the kernels compute it.
float log_decay(float d) { return std::max(-std::exp(d), -100.0f); }

// One chunk's log-decays as the kernels hold them: beta [C][dim] (inclusive, from each sub-chunk's
// first token) and the sub-chunk totals T [subs][dim], with the sums of whole sub-chunks the kernels
// take (summed in sub-chunk order from 0.0f, as each kernel thread does).
struct ChunkDecays {
  std::size_t dim;
  std::vector<float> beta, totals;
  // sum_{from <= m < to} T_m at channel c.
  float between(std::size_t c, int from, int to) const {
    float sum = 0.0f;
    for (int m = from; m < to; ++m) sum += totals[m * dim + c];
    return sum;
  }
  // beta_{t-1} within t's sub-chunk (0 at its first token); beta_t for the off-by-one fault.
  float before(int t, std::size_t c, bool shifted) const {
    if (shifted) return beta[t * dim + c];
    return t % kSub > 0 ? beta[(t - 1) * dim + c] : 0.0f;
  }
  // The decay from s + 1 to the end of s's sub-chunk, T_J - beta_s (<= 0: see chunk_plan.hpp).
  float to_sub_end(int s, std::size_t c) const { return totals[(s / kSub) * dim + c] - beta[s * dim + c]; }
};

}  // namespace

void rwkv6_chunk_replay(int dim, std::int64_t tokens, const float* r, const float* k, const float* v, const float* d,
                        const float* u, float* state, float* out, Rwkv6ChunkFault fault) {
  const std::size_t D = static_cast<std::size_t>(dim);
  ChunkDecays g{D, std::vector<float>(kC * D), std::vector<float>(kSubs * D)};
  std::vector<float> rc(kC * D), kc(kC * D), vc(kC * D), k_decayed(kC * D), r_region(kC * D), k_region(kC * D);
  std::vector<float> q_local(kRwkv6ChunkQueryRows * D), far_keys(kRwkv6ChunkFarKeyRows * D), s_in(D * D), p(kC * kC);
  const bool shifted = fault == Rwkv6ChunkFault::decay_off_by_one;
  for (std::int64_t first = 0; first < tokens; first += kC) {
    const int rows = static_cast<int>(std::min<std::int64_t>(kC, tokens - first));
    // Rows past the sequence: k = v = r = 0 and log w = 0 (beta flat), as the kernels' zero padding.
    for (int m = 0; m < kC; ++m) {
      for (std::size_t c = 0; c < D; ++c) {
        const bool live = m < rows;
        const std::size_t at = static_cast<std::size_t>(first + m) * D + c;
        rc[m * D + c] = live ? r[at] : 0.0f;
        kc[m * D + c] = live ? k[at] : 0.0f;
        vc[m * D + c] = live ? v[at] : 0.0f;
      }
    }
    for (int J = 0; J < kSubs; ++J) {
      for (std::size_t c = 0; c < D; ++c) {
        float running = 0.0f;
        for (int j = 0; j < kSub; ++j) {
          const int m = J * kSub + j;
          if (m < rows) running += log_decay(d[static_cast<std::size_t>(first + m) * D + c]);
          g.beta[m * D + c] = running;
        }
        g.totals[J * D + c] = running;
      }
    }
    // Kernel (2): the state entering this chunk, bf16.
    for (std::size_t e = 0; e < D * D; ++e) s_in[e] = bf(state[e]);

    // Kernel (3), phase by phase on its regions: r_region and k_region hold r and k as loaded (the
    // values are bf16 already), then R^ and the adjacent blocks' K^ in place; q_local holds Q~ of
    // sub-chunks 1..3, far_keys the far blocks' K^ (rwkv6_chunk_key_tile).
    std::copy(rc.begin(), rc.end(), r_region.begin());
    std::copy(kc.begin(), kc.end(), k_region.begin());
    const auto elementwise = [&](bool r_in_place, bool queries, bool keys) {  // phase (c), or a part of it
      for (int m = 0; m < kC; ++m) {
        const int J = m / kSub;
        for (std::size_t c = 0; c < D; ++c) {
          const float before = g.before(m, c, shifted);
          const float rm = r_region[m * D + c], km = k_region[m * D + c];  // before (c) writes them
          if (queries && J > 0) q_local[(m - kSub) * D + c] = bf(rm * std::exp(before));
          if (r_in_place) r_region[m * D + c] = bf(rm * std::exp(g.between(c, 0, J) + before));
          if (!keys) continue;
          const float sigma = g.to_sub_end(m, c);
          float mid = 0.0f;  // sum of T over the sub-chunks strictly between J and I
          for (int I = J + 1; I < kSubs; ++I) {
            float scaled = km * std::exp(sigma + mid);
            if (fault == Rwkv6ChunkFault::boundary_wrong) scaled = km * std::exp(sigma + g.between(c, J + 1, kSubs));
            if (fault == Rwkv6ChunkFault::between_dropped) scaled = km * std::exp(sigma);
            if (fault == Rwkv6ChunkFault::key_unscaled) scaled = km;
            const Rwkv6ChunkKeyTile tile = rwkv6_chunk_key_tile(I, J);
            (tile.over_k ? k_region : far_keys)[(tile.row + m % kSub) * D + c] = bf(scaled);
            mid += g.totals[I * D + c];
          }
        }
      }
    };
    const auto diagonal = [&] {  // phase (b): the diagonal blocks, pair by pair, from r's and k's regions
      for (int J = 0; J < kSubs; ++J) {
        for (int t = J * kSub; t < J * kSub + kSub; ++t) {
          for (int s = J * kSub; s <= t; ++s) {
            float a = 0.0f;
            if (s < t) {
              for (std::size_t c = 0; c < D; ++c) {
                a = std::fma(r_region[t * D + c] * k_region[s * D + c],
                             std::exp(g.before(t, c, shifted) - g.beta[s * D + c]), a);
              }
            } else if (fault != Rwkv6ChunkFault::bonus_dropped) {
              for (std::size_t c = 0; c < D; ++c) a = std::fma(r_region[t * D + c] * u[c], k_region[t * D + c], a);
            }
            p[t * kC + s] = bf(a);
          }
        }
      }
    };
    std::fill(p.begin(), p.end(), 0.0f);
    if (fault == Rwkv6ChunkFault::diagonal_after_keys) {
      elementwise(false, true, true);
      diagonal();
      elementwise(true, false, false);
    } else if (fault == Rwkv6ChunkFault::query_after_r_decayed) {
      diagonal();
      elementwise(true, false, true);
      elementwise(false, true, false);
    } else {
      diagonal();
      elementwise(true, true, true);
    }
    if (fault != Rwkv6ChunkFault::off_diagonal_dropped) {  // phase (d)
      for (int block = 0; block < kRwkv6ChunkOffDiagonalBlocks; ++block) {
        const auto [I, J] = rwkv6_chunk_off_diagonal_block(block);
        const Rwkv6ChunkKeyTile tile = rwkv6_chunk_key_tile(I, J);
        const float* keys = (tile.over_k ? k_region : far_keys).data() + tile.row * D;
        for (int t = I * kSub; t < I * kSub + kSub; ++t) {
          for (int s = J * kSub; s < J * kSub + kSub; ++s) {
            float a = 0.0f;
            for (std::size_t c = 0; c < D; ++c) a += q_local[(t - kSub) * D + c] * keys[(s - J * kSub) * D + c];
            p[t * kC + s] = bf(a);
          }
        }
      }
    }
    for (int t = 0; t < rows; ++t) {  // phase (e), R^ from r's region
      for (std::size_t j = 0; j < D; ++j) {
        float o = 0.0f;
        for (int s = 0; s <= t; ++s) o += p[t * kC + s] * vc[s * D + j];
        for (std::size_t i = 0; i < D; ++i) o += r_region[t * D + i] * s_in[i * D + j];
        out[static_cast<std::size_t>(first + t) * D + j] = bf(o);
      }
    }

    // Kernel (1): K~ = bf16(k . exp((T_J - beta_s) + sum_{m > J} T_m)), U = K~^T V rounded to bf16;
    // kernel (2) carries S = diag(exp(b_last)) S + U in fp32, b_last = ((T_0 + T_1) + T_2) + T_3.
    for (int m = 0; m < kC; ++m) {
      for (std::size_t c = 0; c < D; ++c) {
        const float exponent = g.to_sub_end(m, c) + g.between(c, m / kSub + 1, kSubs);
        k_decayed[m * D + c] = bf(kc[m * D + c] * std::exp(exponent));
      }
    }
    for (std::size_t i = 0; i < D; ++i) {
      const float carry = std::exp(g.between(i, 0, kSubs));
      for (std::size_t j = 0; j < D; ++j) {
        float uij = 0.0f;
        for (int m = 0; m < kC; ++m) uij += k_decayed[m * D + i] * vc[m * D + j];
        state[i * D + j] = std::fma(carry, state[i * D + j], bf(uij));
      }
    }
  }
}

}  // namespace arch_bench
