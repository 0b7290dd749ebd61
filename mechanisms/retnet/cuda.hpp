#pragma once
// CUDA kernels of multi-scale retention (cuda.cu) and the CUDA prepared cells (cuda_cells.cpp).
// Layouts as on the CPU (cpu.hpp): q/k [batch_heads, tokens, dk], v/out [batch_heads, tokens, dv]
// in storage T (float or bf16); S [batch_heads, dk, dv] in fp32; fp32 arithmetic throughout. Head
// h (row bh, h = bh % heads) decays by gamma_h = 1 - 2^(-5-h), as retnet_gamma(h) rounded to fp32
// (what the CPU decode step uses). Launchers only enqueue on `stream`; each launch is checked.
// No CUDA headers here: T = bf16 is arch_bench::bf16 (bit-identical to __nv_bfloat16).
#include "mechanisms/common/cuda_declarations.hpp"
#include "mechanisms/retnet/cuda_plan.hpp"

namespace arch_bench {

// plan.tokens steps of S = gamma_h S + k_t v_t^T, o_t = S^T q_t, in place on `state` (one kernel,
// S read and written once). A decode step is plan.tokens = 1 (q/k/v/out one token per head); the
// prefill is the recurrent form over L tokens, continuing from whatever S holds.
template <class T>
void launch_retnet_recurrence(const ColumnRecurrencePlan& plan, std::int64_t heads, const T* q, const T* k,
                              const T* v, float* state, T* out, CUstream_st* stream);

// The bf16 prefill on tensor cores (common/chunk_scalar_decay.cuh, plan: retnet_chunked_prefill_plan):
// the same recurrence in chunkwise form, o_t = S_t^T q_t for L tokens, continuing from `state` and
// leaving the final S there; `chunk_states` and `chunk_log_decay` are the plan's workspace
// (workspace_state_elements and workspace_decay_elements floats). configure_ once per plan, at
// prepare time (it opts the kernels in to the plan's shared memory).
void configure_retnet_chunked_prefill(const ChunkScalarDecayPlan& plan);
void launch_retnet_chunked_prefill(const ChunkScalarDecayPlan& plan, std::int64_t heads, const bf16* q, const bf16* k,
                                   const bf16* v, float* state, bf16* out, float* chunk_states,
                                   float* chunk_log_decay, CUstream_st* stream);

// The CUDA decode or prefill cell (cuda_cells.cpp; CUDA builds only). `backend` is the CUDA backend.
std::unique_ptr<PreparedCell> prepare_retnet_cuda(const Cell& cell, std::uint64_t seed, Backend& backend);

}  // namespace arch_bench
