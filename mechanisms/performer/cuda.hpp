#pragma once
// CUDA kernels of causal Performer attention (cuda.cu) and its CUDA prepared cells (cuda_cells.cpp).
// Layouts as on the CPU (cpu.hpp): q/k [batch_heads, tokens, dk], v/out [batch_heads, tokens, dv] in
// storage T (float or bf16); the packed projection [dk, rows] (pack_performer_projection), S
// [batch_heads, m, dv], z [batch_heads, m] and M [batch_heads] in fp32; fp32 accumulation everywhere.
// Launchers only enqueue on `stream`; each launch is checked. No CUDA headers here.
#include "mechanisms/common/cuda_declarations.hpp"
#include "mechanisms/performer/cuda_plan.hpp"

namespace arch_bench {

// S = 0, z = 0, M = -inf for every head (performer_reset_state on the device).
void launch_performer_reset_state(std::int64_t batch_heads, std::int64_t features, std::int64_t dv, float* state,
                                  float* normalizer, float* running_max, CUstream_st* stream);

// One decode step in place (one fused kernel per step): the features of q_t and k_t from W, the
// running max, the rescale-and-update of (S, z) and the read-out. `denominators` [batch_heads]
// receives each head's phi(q).z (the cells count the nonpositive ones, as the CPU kernel does).
template <class T>
void launch_performer_decode(const PerformerDecodePlan& plan, const float* projection, const T* q, const T* k,
                             const T* v, float* state, float* normalizer, float* running_max, T* out,
                             float* denominators, CUstream_st* stream);

// Causal prefill over plan.tokens tokens (five kernels, see PerformerPrefillPlan); (S, z, M) carry
// in and out. `workspace` holds plan.workspace.floats floats; its `denominators` part receives every
// row's phi(q).z. plan.prefill_path picks the kernels: SIMT throughout (stage 1 from the fp32
// `projection`), or (bf16 storage only) stages 1, 3 and 5 on tensor cores, stage 1 from
// `split_projection` (launch_performer_split_projection; null on the SIMT path). A tensor-core plan with fp32 storage or without the split throws
// std::invalid_argument before anything is enqueued.
template <class T>
void launch_performer_prefill(const PerformerPrefillPlan& plan, const float* projection, const bf16* split_projection,
                              const T* q, const T* k, const T* v, float* state, float* normalizer, float* running_max,
                              T* out, float* workspace, CUstream_st* stream);

// W_hi = bf16(W), W_lo = bf16(W - W_hi) of the packed fp32 projection [dk, n] into `split`
// ([2][dk_padded][columns_padded] bf16, zero-padded; plan.split_elements()). Once per cell: W is
// fixed, so this is set-up, not part of a timed prefill (cuda_tensor_core.cu).
void launch_performer_split_projection(const PerformerTensorCoreFeaturePlan& plan, const float* projection,
                                       bf16* split, CUstream_st* stream);

// Stage 1 on tensor cores (cuda_tensor_core.cu): the stabilised features of every query and key
// (computed in fp32 as the SIMT feature kernel computes them, stored as bf16 phi(q) and bf16 hi + lo
// planes of phi(k): PerformerPrefillWorkspace) and the keys' fp32 log-scales.
void launch_performer_tensor_core_features(const PerformerTensorCoreFeaturePlan& plan, std::int64_t batch_heads,
                                           const bf16* split, const bf16* q, const bf16* k, bf16* query_features,
                                           bf16* key_high, bf16* key_low, float* key_scale, CUstream_st* stream);

// Stages 3 + 4 and 5 on tensor cores (cuda_tensor_core_chunks.cu), on plan's workspace parts: one
// pass per (head, 64 x 64 tile of S) over the chunks that writes the state and key sums entering
// each chunk (fp32) from phi(k) hi + lo, continuing from and updating (state, normalizer) as the
// SIMT prefix of stage 4 does; then the outputs (bf16) and every row's denominator from phi(q) and
// phi(k) hi.
void launch_performer_tensor_core_chunk_state_scan(const PerformerPrefillPlan& plan, const bf16* key_high,
                                                   const bf16* key_low, const float* key_scale, const float* row_max,
                                                   const float* carried_max, const bf16* v, float* state,
                                                   float* normalizer, float* chunk_states, float* chunk_sums,
                                                   CUstream_st* stream);
void launch_performer_tensor_core_chunk_outputs(const PerformerPrefillPlan& plan, const bf16* query_features,
                                                const bf16* key_high, const float* key_scale,
                                                const float* row_max, const float* carried_max, const bf16* v,
                                                const float* chunk_states, const float* chunk_sums,
                                                float* denominators, bf16* out, CUstream_st* stream);

// The CUDA decode or prefill cell (cuda_cells.cpp; CUDA builds only). `backend` is the CUDA backend.
std::unique_ptr<PreparedCell> prepare_performer_cuda(const Cell& cell, std::uint64_t seed, Backend& backend);

}  // namespace arch_bench
