#pragma once
// A CPU replay of Performer's bf16 prefill on tensor cores (cuda_tensor_core.cu, cuda.cu's stage 2,
// cuda_tensor_core_chunks.cu), bf16 roundings exactly where the kernels round:
//  1. the projection split into W_hi = bf16(W), W_lo = bf16(W - W_hi) as
//     performer_split_projection_kernel rounds it, every projection accumulated in fp32 one 16-wide
//     step of dk at a time (x W_hi then x W_lo), |x~|^2 / 2 by the kernel's fmaf chain, the same
//     stabilised favor+ or trig features (performer_trig_pair is the kernel's own definition) in
//     fp32, stored as the kernel stores them: phi(q) rounded to bf16 once, phi(k) as bf16 hi + lo;
//  2. the running max M at every token (exact: a max);
//  3 + 4. per 64-token chunk in order, the running state: S_in(c) is what stage 5 reads; then
//     S = S_in(c) e^(M_in - M_end) in fp32, and K~ = e^(c_j - M_end) (phi(k_j) hi + lo) split into
//     bf16 hi + lo, S += K~_hi^T V_c + K~_lo^T V_c into the same fp32 accumulator one 16-token step
//     at a time (hi then lo); z = fmaf(z, e^(M_in - M_end), z_c) with z_c the fp32 sum of hi + lo
//     in token order;
//  5. per chunk, A = phi(Q) phi(K)_hi^T and phi(Q) (S_in hi + S_in lo), each accumulated in fp32
//     one 16-wide step of m at a time, the latter then times e^(M_in - M_r) in fp32; P =
//     bf16(A e^(c_j - M_r)) causal inclusive, then + P V one 16-token step at a time; the
//     denominator the fp32 fmaf chain of phi(q) against z_in, times e^(M_in - M_r), then + P's row
//     in order; the output bf16(acc * (1 / denominator)).
// Each step of 16 exact bf16 x bf16 products is summed in fp64 before it meets the fp32 accumulator,
// as an mma does; the kernels' expf and the mma's internal order may differ from it by an fp32
// rounding, far below the bf16 roundings this replay is for. Without a GPU this is the evidence that
// the kernels' arithmetic meets bf16's tolerance and that the faulty variants below do not:
// tests/test_performer_tensor_core_replay.cpp holds it to the fp64 reference.
#include <cstdint>
#include <vector>

#include "mechanisms/performer/cpu.hpp"

namespace arch_bench {

// A deliberate fault, for the test that shows the replay's check can fail.
enum class PerformerReplayFault {
  none,
  high_part_only,    // W rounded to bf16 once (W_lo dropped): one product instead of two
  no_causal_mask,    // stage 5 lets row r see the chunk's later keys too
  no_carried_state,  // stage 5 leaves out the state entering the chunk (S_in, z_in)
  state_high_part_only,  // K~ (stage 3) and S_in (stage 5) as bf16 hi alone, not hi + lo
  key_features_high_only,  // phi(k) stored as bf16 hi alone (stage 3 without the lo plane)
  no_row_scale,            // stage 5's inter-chunk terms left relative to M_in, not brought to M_r
  state_written_after_update,  // the scan writes S_in(c) after adding chunk c (stage 5 sees its own keys twice)
  chunk_states_bf16,           // the state entering each chunk stored (and carried on) as bf16
};

// W [dk][n] (the packed fp32 projection) as the device splits it: each part's values are bf16.
struct PerformerSplitProjection {
  int dk = 0, n = 0;
  std::vector<float> high, low;
};
PerformerSplitProjection split_performer_projection(const float* packed, int dk, int n);

// One token's m stabilised features and its log-scale (favor+: max p - |x~|^2/2; trig: |x~|^2/2; a
// query's is computed the same way and dropped), as the tensor-core feature kernel writes them. `x`:
// dk values, exactly bf16.
float replay_performer_tensor_core_token(const PerformerShape& shape, const PerformerSplitProjection& w, const float* x,
                                         float* features, PerformerReplayFault fault = PerformerReplayFault::none);

// (S, z, M) of every head as the kernels keep them in fp32: [bh][m][dv], [bh][m], [bh].
struct PerformerReplayState {
  std::vector<float> state, normalizer, running_max;
};
PerformerReplayState performer_replay_empty_state(const PerformerShape& shape);

// The prefill of `tokens` tokens of every head (q, k [bh][tokens][dk], v [bh][tokens][dv], values
// exactly bf16) continuing from `carried` (updated, as the kernels update (S, z, M): the fp32 total
// of the state scan); returns the outputs [bh][tokens][dv] rounded to bf16 as stored.
std::vector<float> replay_performer_tensor_core_prefill(const PerformerShape& shape, std::int64_t tokens,
                                                        const PerformerSplitProjection& w, const float* q,
                                                        const float* k, const float* v, PerformerReplayState& carried,
                                                        PerformerReplayFault fault = PerformerReplayFault::none);

}  // namespace arch_bench
