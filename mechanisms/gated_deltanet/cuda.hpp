#pragma once
// CUDA kernels of Gated DeltaNet (cuda.cu) and the CUDA prepared cells (cuda_cells.cpp). Layouts as
// on the CPU (cpu.hpp): q/k [batch_heads, tokens, dk], v/out [batch_heads, tokens, dv] in storage T
// (float or bf16); g (log decay) and beta [batch_heads, tokens] in fp32; S [batch_heads, dk, dv] in
// fp32; q and k L2-normalised inside (q also scaled by dk^-1/2), in fp32, as the CPU kernels do.
// Launchers only enqueue on `stream`; each launch is checked.
// No CUDA headers here: T = bf16 is arch_bench::bf16 (bit-identical to __nv_bfloat16).
#include "mechanisms/common/cuda_declarations.hpp"
#include "mechanisms/gated_deltanet/cuda_plan.hpp"

namespace arch_bench {

// plan.tokens steps of S = alpha_t (I - beta_t k_t k_t^T) S + beta_t k_t v_t^T, o_t = S^T q_t
// (alpha_t = exp(g_t)), in place on `state` (one kernel, S read and written once). A decode step is
// plan.tokens = 1 (q/k/v/out one token per head, g and beta one value per head); the prefill is the
// sequential form over L tokens, continuing from whatever S holds.
template <class T>
void launch_gated_deltanet_recurrence(const ColumnRecurrencePlan& plan, const T* q, const T* k, const T* v,
                                      const float* g, const float* beta, float* state, T* out, CUstream_st* stream);

// The chunkwise tensor-core prefill of bf16 cells whose head sizes it takes
// (gated_deltanet_cuda_prefill_is_chunked; common/chunk_delta_rule.cuh): `state` carries in and out
// as above; `workspace` (plan.workspace_bf16_elements()) and `chunk_log_decay`
// (plan.workspace_decay_elements) are the plan's workspace. configure_... once per plan, at prepare
// time, before the first launch (it lifts the kernels' shared-memory limit past 48 KiB).
void configure_gated_deltanet_chunked_prefill(const ChunkDeltaRulePlan& plan);
void launch_gated_deltanet_chunked_prefill(const ChunkDeltaRulePlan& plan, const bf16* q, const bf16* k, const bf16* v,
                                           const float* g, const float* beta, float* state, bf16* out,
                                           bf16* workspace, float* chunk_log_decay, CUstream_st* stream);

// The CUDA decode or prefill cell (cuda_cells.cpp; CUDA builds only). `backend` is the CUDA backend.
std::unique_ptr<PreparedCell> prepare_gated_deltanet_cuda(const Cell& cell, std::uint64_t seed, Backend& backend);

}  // namespace arch_bench
