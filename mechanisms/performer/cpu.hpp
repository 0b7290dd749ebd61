#pragma once
// CPU kernels of causal Performer attention (favor+ or trig random features; the maths and the
// stabilisation are described in reference.hpp). Inputs [batch_heads, tokens, dim] in storage T;
// the projection and the state are fp32 whatever the storage dtype (see linear_attention/cpu.hpp
// for why a bf16 running sum does not work).
//
// State per head: S [m, dv], z [m] and the running max M of the keys' log-scales (one float):
// S and z are stored relative to exp(M), so every term folded into them is <= 1 in size.
// With the published stabiliser (reference.hpp) M is the key max max_{t,i} w_i.k~_t, S and z are
// absolute, and `value_sum` [dv + 1] per head carries sum_t v_t and the token count (slot dv), which
// a rise of M needs to keep eps fixed; it is unused (may be null) with the causal stabiliser.
#include <cstdint>

#include "mechanisms/common/matrix.hpp"
#include "mechanisms/performer/reference.hpp"
#include "mechanisms/common/kernel_variant.hpp"

namespace arch_bench {

struct PerformerShape {
  std::int64_t batch_heads = 0;
  std::int64_t dk = 0;
  std::int64_t dv = 0;
  std::int64_t features = 0;  // m
  PerformerFeatures kind = PerformerFeatures::favor_plus;
  PerformerStabilizer stabilizer = PerformerStabilizer::causal;  // published: favor+ only
  std::int64_t projection_rows() const { return performer_projection_rows(kind, features); }
  bool published() const { return stabilizer == PerformerStabilizer::published; }
};

// Floats of the published stabiliser's value_sum: batch_heads x (dv + 1), 0 for causal.
inline std::int64_t performer_value_sum_floats(const PerformerShape& shape) {
  return shape.published() ? shape.batch_heads * (shape.dv + 1) : 0;
}

inline constexpr std::int64_t kPerformerChunk = 64;
inline constexpr std::int64_t kPerformerMaxFeatures = 4096;  // Mechanism::unsupported() enforces
inline constexpr std::int64_t kPerformerMaxDim = 256;

// Floats of the packed projection: dk * projection_rows.
inline std::int64_t performer_projection_floats(const PerformerShape& shape) {
  return shape.dk * shape.projection_rows();
}
// Packs W [rows, dk] (from performer_projection) into the kernel layout [dk, rows], multiplied by
// dk^(-1/4): x~ = x dk^(-1/4) is folded into W, and the transposed layout makes the inner loop of
// the projection run over features (contiguous, vectorised) rather than over the short dk.
void pack_performer_projection(const MatrixD& projection, float* packed);

// Empties the state: S = 0, z = 0, M = -inf (no key seen), value_sum = 0 (published).
void performer_reset_state(const PerformerShape& shape, float* state, float* normalizer,
                           float* running_max, float* value_sum = nullptr);

// Published stabiliser: key_max[bh] = max(key_max[bh], max_{t,i} w_i.k~_t) over `tokens` keys
// [batch_heads, tokens, dk]. A prefill takes this maximum itself; `arch-bench conformance` presets a
// decode loop's M with it, so that its rows use the same M as the published prefill.
template <class T, KernelVariant V = KernelVariant::dispatched>
void performer_key_max(const PerformerShape& shape, std::int64_t tokens, const float* projection, const T* k,
                       float* key_max);

// Floats of workspace the chunkwise prefill needs for `threads` threads (one slice each).
std::int64_t performer_prefill_workspace_floats(const PerformerShape& shape, int threads);

// Every kernel returns the number of output rows (tokens x heads) whose denominator phi(q).z was
// <= 0 or not finite: possible with trig features, whose estimate of a positive kernel can be
// negative. Such rows are written as computed (num / den), never trapped.

// One decode step, in place: folds token (q, k, v) into (S, z, M) and writes its output row.
// q/k/v/out hold one token per head ([batch_heads, dim]). Allocates nothing. Published: M becomes
// max(M, this key's max), so a step after a prefill over L tokens equals the published prefill over
// L + 1 tokens at its last row (a decoder cannot know later keys).
template <class T, KernelVariant V = KernelVariant::dispatched>
std::int64_t performer_decode_step(const PerformerShape& shape, const float* projection, const T* q,
                                   const T* k, const T* v, float* state, float* normalizer,
                                   float* running_max, T* out, float* value_sum = nullptr);

// Causal prefill over `tokens` tokens, chunkwise (chunk 64): the inter-chunk part reads the state
// carried in from earlier chunks, the intra-chunk part is a masked product over the chunk's keys,
// then the chunk is folded into the state. Each row uses the running max at its own token, so the
// result equals the recurrent form up to fp32 rounding. (S, z, M) carry in and out. `workspace`
// holds performer_prefill_workspace_floats(shape, threads) floats; at most `threads` threads run.
// Published: a first pass over the keys takes M = max(M carried in, the key max of these tokens),
// the carried state is brought to it, and every row uses that M (the published look-ahead).
template <class T, KernelVariant V = KernelVariant::dispatched>
std::int64_t performer_prefill_chunkwise(const PerformerShape& shape, std::int64_t tokens,
                                         const float* projection, const T* q, const T* k,
                                         const T* v, float* state, float* normalizer,
                                         float* running_max, float* workspace, int threads, T* out,
                                         float* value_sum = nullptr);

// The same prefill as a loop of decode steps: the recurrent form the chunkwise one must equal.
template <class T, KernelVariant V = KernelVariant::dispatched>
std::int64_t performer_prefill_recurrent(const PerformerShape& shape, std::int64_t tokens,
                                         const float* projection, const T* q, const T* k,
                                         const T* v, float* state, float* normalizer,
                                         float* running_max, T* out, float* value_sum = nullptr);

}  // namespace arch_bench
