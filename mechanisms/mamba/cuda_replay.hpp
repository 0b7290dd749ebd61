#pragma once
// A CPU replay of the CUDA prefill's arithmetic (cuda.cu, mamba_warp_scan_kernel and, for a split
// plan, mamba_segment_combine_kernel): the same blocks, segments, warps and lanes, the same chunking
// of time, the same B/C tiles written through mamba_tile_index and read back as the lanes' 16-byte
// vectors, the same per-lane fold, the same five-step shuffle scan, the same carry of h between
// chunks, and for a split plan the same three passes (segment maps from h = 0 with their dt sums,
// their combination in order, the outputs from each segment's entering h), in fp32 with the same
// roundings (B and C widened to fp32 tiles, exp2 of dt (A log2 e), a lane's decay as exp2 of its dt
// sum, fmaf where the kernel fuses, the dt sums' butterfly). Only the exp2 differs (the device's
// ex2.approx is within 2 ulp of exp2f). Without a GPU this is the
// evidence that the kernel's algorithm is right: tests/test_mamba_scan_replay.cpp holds it to the
// fp64 reference.
#include "mechanisms/mamba/cpu.hpp"
#include "mechanisms/mamba/cuda_plan.hpp"

namespace arch_bench {

// A deliberate fault, for the tests that show the replay's check can fail.
enum class MambaReplayFault {
  none,
  carry_skipped,          // every chunk starts from h = 0 instead of the carried h
  segment_carry_skipped,  // split: every segment but the first starts from h = 0 (pass 2 dropped)
  segment_decay_skipped,  // split: pass 2 carries h through a segment undecayed (P = 1)
  lane_decay_from_first_item,  // a lane's fold decays h by its first item's exp only, not by its dt sum's
  // The entry kernel's (plan.kernel entry):
  chain_entry_dropped,      // a lane's y partial leaves its last entry out of the C h chain
  lane_partial_dropped,     // the transpose-reduce drops the channel's last lane's partial
  reduction_token_skipped,  // token 7 of every tile skips the reduction (its y taken as 0)
};

// The prefill of `plan.tokens` tokens, as launch_mamba_prefill computes it, for either kernel
// (plan.kernel). The entry kernel's replay (cuda_entry.cu) runs per (channel, entry) the same
// operations in the same order: dt = softplus(dt_raw + bias), dt u, D u and silu(z) once per
// (token, channel), by entry_activations.hpp (exp2f and 1 / x for ex2 and rcp.approx); per element
// dt x (A log2 e), exp2 (exp2f for ex2.approx), fmaf(a, h, du B); per lane (4 entries) its y
// partial C_0 h_0, then fmaf over entries 1..3; y of a token the lanes' partials summed in the
// transpose-reduce's order ((p_0 + p_2) + (p_1 + p_3) at N 16, p_0 + p_1 at N 8), (y + D u)
// silu(z); the map pass's dt sum in token order. Which thread makes which add does not enter the
// arithmetic (each add commutes), so it walks rows and segments in order. `state` carries in and
// out ([rows, N] fp32), `out` is [rows, tokens] like the inputs.
template <class T>
void replay_mamba_prefill(const MambaPrefillPlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                          float* state, T* out, MambaReplayFault fault = MambaReplayFault::none);

}  // namespace arch_bench
