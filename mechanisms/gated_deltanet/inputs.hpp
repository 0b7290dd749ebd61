#pragma once
// Seeded gates of Gated DeltaNet for a cell, besides the q/k/v every attention-style mechanism
// draws (mechanisms/common/inputs.hpp). Per token and head, fp32 (as flash-linear-attention keeps
// its gates), layout [batch_heads, tokens]:
//   g_t = -softplus(x), x ~ N(-3.5, 1): the log decay, alpha_t = exp(g_t) mostly in [0.82, 0.996]
//        (+-2 sigma; median 0.971), i.e. memory horizons 1/(1 - alpha) from ~5 to ~250 tokens, the
//        range of Mamba-2/Gated DeltaNet's -exp(A_log) softplus(dt) with dt in [1e-3, 1e-1];
//   beta_t = sigmoid(y), y ~ N(0, 1): the writing strength, mostly in [0.12, 0.88].
#include <cstdint>
#include <vector>

#include "core/cell.hpp"

namespace arch_bench {

struct GatedDeltaNetGates {
  std::int64_t batch_heads = 0;
  std::int64_t tokens = 0;  // decode: L + 1 (context plus the new token); prefill: L
  std::vector<float> g;     // log decay, <= 0
  std::vector<float> beta;  // in (0, 1)

  const float* g_at(std::int64_t bh, std::int64_t t) const { return g.data() + bh * tokens + t; }
  const float* beta_at(std::int64_t bh, std::int64_t t) const { return beta.data() + bh * tokens + t; }
  // Tokens [first, first + rows) of every head of x (g or beta), [batch_heads, rows]: what a kernel
  // is handed for those tokens (AttentionInputs::head_rows is the same for q, k, v).
  std::vector<float> head_rows(const std::vector<float>& x, std::int64_t first, std::int64_t rows) const;
  // One head's values for tokens [0, rows), widened to fp64 for the reference.
  std::vector<double> head_vector(const std::vector<float>& x, std::int64_t bh, std::int64_t rows) const;
};

// Draws the gates of `tokens` tokens of every (batch, head) of the cell; the stream depends on the
// seed and the shape only, apart from the q/k/v stream of the same seed.
GatedDeltaNetGates make_gated_deltanet_gates(const Cell& cell, std::int64_t tokens, std::uint64_t seed);

}  // namespace arch_bench
