#pragma once
// CUDA kernel of Mamba-2's SSD (cuda.cu) and its CUDA prepared cells (cuda_cells.cpp). Layouts as
// on the CPU (cpu.hpp, cuda_plan.hpp); storage T in {float, bf16}, fp32 state and parameters, fp32
// accumulation. Launchers only enqueue on `stream`; each launch is checked. No CUDA headers here:
// T = bf16 is arch_bench::bf16 (bit-identical to __nv_bfloat16). Compiled, not yet run on a GPU.
#include "mechanisms/common/cuda_declarations.hpp"
#include "mechanisms/mamba2/cuda_plan.hpp"

namespace arch_bench {

// plan.tokens tokens of the recurrence in place on S (a decode step: plan_mamba2_cuda(shape, 1) and
// the decode layouts; a prefill: S zeroed first). out receives every token's gated output.
template <class T>
void launch_mamba2_scan(const Mamba2CudaPlan& plan, const Mamba2Parameters& params, const Mamba2Tokens<T>& x,
                        float* state, T* out, CUstream_st* stream);

// The bf16 prefill as the chunked SSD on tensor cores (common/chunk_scalar_decay.cuh; plan:
// mamba2_chunked_prefill_plan): the same outputs (D x and the gate included) for plan.tokens tokens,
// continuing from `state` [rows, N, P] and leaving the final state there; `chunk_states` and
// `chunk_log_decay` are the plan's workspace. configure_ once per plan, at prepare time.
void configure_mamba2_chunked_prefill(const ChunkScalarDecayPlan& plan);
void launch_mamba2_chunked_prefill(const ChunkScalarDecayPlan& plan, const Mamba2CudaPlan& shape,
                                   const Mamba2Parameters& params, const Mamba2Tokens<bf16>& x, float* state,
                                   bf16* out, float* chunk_states, float* chunk_log_decay, CUstream_st* stream);

// The CUDA decode or prefill cell (cuda_cells.cpp; CUDA builds only). `backend` is the CUDA backend.
std::unique_ptr<PreparedCell> prepare_mamba2_cuda(const Cell& cell, std::uint64_t seed, Backend& backend);

}  // namespace arch_bench
