#pragma once
// CUDA kernels of Mamba's selective scan (cuda.cu) and its CUDA prepared cells (cuda_cells.cpp).
// Layouts as on the CPU (cpu.hpp, cuda_plan.hpp); storage T in {float, bf16}, fp32 state and
// parameters, fp32 accumulation. Launchers only enqueue on `stream`; each launch is checked.
#include "mechanisms/common/cuda_declarations.hpp"
#include "mechanisms/mamba/cuda_plan.hpp"

namespace arch_bench {

// One decode step in place over h [rows, N] (one fused kernel: softplus, state update, C.h, D skip
// and silu gate). The token's inputs use the decode layouts ([rows] and [batch, N]).
template <class T>
void launch_mamba_decode(const MambaDecodePlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                         float* state, T* out, CUstream_st* stream);

// Causal prefill over plan.tokens tokens (see MambaPrefillPlan); h carries in and out. `workspace`
// holds plan.workspace_floats floats (none unsplit: it may be null then); its contents on entry do
// not matter. One launch unsplit, three when the plan splits the sequence.
template <class T>
void launch_mamba_prefill(const MambaPrefillPlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                          float* state, float* workspace, T* out, CUstream_st* stream);

// The CUDA decode or prefill cell (cuda_cells.cpp; CUDA builds only). `backend` is the CUDA backend.
std::unique_ptr<PreparedCell> prepare_mamba_cuda(const Cell& cell, std::uint64_t seed, Backend& backend);

}  // namespace arch_bench
