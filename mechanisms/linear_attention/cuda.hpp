#pragma once
// CUDA kernels of causal linear attention (cuda.cu) and the CUDA prepared cells (cuda_cells.cpp).
// Layouts as on the CPU (cpu.hpp): q/k [batch_heads, tokens, dk], v/out [batch_heads, tokens, dv]
// in storage T (float or bf16); S [batch_heads, dk, dv] and z [batch_heads, dk] in fp32; fp32
// accumulation everywhere. Launchers only enqueue on `stream`; each launch is checked.
// No CUDA headers here: T = bf16 is arch_bench::bf16 (bit-identical to __nv_bfloat16).
#include "mechanisms/common/cuda_declarations.hpp"
#include "mechanisms/common/feature_maps.hpp"
#include "mechanisms/linear_attention/cuda_plan.hpp"

namespace arch_bench {

// One decode step in place (one fused kernel): S += phi(k) v^T, z += phi(k),
// out = phi(q)^T S / phi(q)^T z. q/k/v/out hold one token per head.
template <class T>
void launch_linear_attention_decode(const LinearDecodePlan& plan, FeatureMap map, const T* q, const T* k,
                                    const T* v, float* state, float* normalizer, T* out, CUstream_st* stream);

// Chunkwise causal prefill over plan.tokens tokens (three kernels, see LinearPrefillPlan). The
// state carries in and out: the prefill continues from whatever (S, z) holds. `chunk_states`
// and `chunk_sums` are the plan's workspace (workspace_state_elements, workspace_sum_elements).
template <class T>
void launch_linear_attention_prefill(const LinearPrefillPlan& plan, FeatureMap map, const T* q, const T* k,
                                     const T* v, float* state, float* normalizer, T* out, float* chunk_states,
                                     float* chunk_sums, CUstream_st* stream);

// The bf16 prefill on tensor cores (cuda_tensor_core.cu; plan: plan_linear_attention_tensor_core_prefill),
// same contract as launch_linear_attention_prefill: (S, z) carry in and out. `extended_state`
// (linear_attention_extended_state_elements floats), `chunk_states` and `chunk_log_decay` (the
// plan's workspace) are scratch. configure_... once per plan, at prepare time (shared memory past 48 KiB).
void configure_linear_attention_tensor_core_prefill(const ChunkScalarDecayPlan& plan);
void launch_linear_attention_tensor_core_prefill(const ChunkScalarDecayPlan& plan, FeatureMap map, const bf16* q,
                                                 const bf16* k, const bf16* v, float* state, float* normalizer,
                                                 bf16* out, float* extended_state, float* chunk_states,
                                                 float* chunk_log_decay, CUstream_st* stream);

// The CUDA decode or prefill cell (cuda_cells.cpp; CUDA builds only). `backend` is the CUDA backend.
std::unique_ptr<PreparedCell> prepare_linear_attention_cuda(const Cell& cell, std::uint64_t seed, Backend& backend);

}  // namespace arch_bench
