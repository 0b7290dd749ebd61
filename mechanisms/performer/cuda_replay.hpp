#pragma once
// A CPU replay of Performer's bf16 prefill with its features on tensor cores (cuda_tensor_core.cu,
// then stages 2-5 of cuda.cu): the projection split into W_hi = bf16(W), W_lo = bf16(W - W_hi) as
// performer_split_projection_kernel rounds it, every projection accumulated in fp32 one 16-wide
// step of dk at a time (x W_hi then x W_lo, each step's 16 exact bf16 x bf16 products summed before
// they meet the accumulator, as an mma does), |x~|^2 / 2 by the kernel's fmaf chain, the same
// stabilised favor+ or trig features (performer_trig_pair is the kernel's own definition), and the
// bf16 rounding of the stored output. Stages 2-5 are the SIMT kernels the fp32 prefill is held to
// 1e-4 with; the replay folds the features in with the same causal running max, in fp64 (their fp32
// rounding is ~1e-6, far below what this replay is for). Without a GPU this is the evidence that
// the split meets bf16's tolerance and that W_hi alone does not: tests/
// test_performer_tensor_core_replay.cpp holds it to the fp64 reference.
#include <cstdint>
#include <vector>

#include "mechanisms/performer/cpu.hpp"

namespace arch_bench {

// A deliberate fault, for the test that shows the replay's check can fail.
enum class PerformerReplayFault {
  none,
  high_part_only,  // W rounded to bf16 once (W_lo dropped): one product instead of two
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
// exactly bf16) continuing from `carried` (updated, as the kernels update (S, z, M)); returns the
// outputs [bh][tokens][dv] rounded to bf16 as stored.
std::vector<float> replay_performer_tensor_core_prefill(const PerformerShape& shape, std::int64_t tokens,
                                                        const PerformerSplitProjection& w, const float* q,
                                                        const float* k, const float* v, PerformerReplayState& carried,
                                                        PerformerReplayFault fault = PerformerReplayFault::none);

}  // namespace arch_bench
