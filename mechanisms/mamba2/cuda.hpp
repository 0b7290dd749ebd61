#pragma once
// CUDA kernel of Mamba-2's SSD (cuda.cu) and its CUDA prepared cells (cuda_cells.cpp). Layouts as
// on the CPU (cpu.hpp, cuda_plan.hpp); storage T in {float, bf16}, fp32 state and parameters, fp32
// accumulation. Launchers only enqueue on `stream`; each launch is checked. No CUDA headers here:
// T = bf16 is arch_bench::bf16 (bit-identical to __nv_bfloat16). Compiled, not yet run on a GPU.
#include <cstdint>
#include <memory>

#include "core/bf16.hpp"
#include "mechanisms/mamba2/cuda_plan.hpp"

struct CUstream_st;

namespace arch_bench {

class Backend;
class PreparedCell;

// plan.tokens tokens of the recurrence in place on S (a decode step: plan_mamba2_cuda(shape, 1) and
// the decode layouts; a prefill: S zeroed first). out receives every token's gated output.
template <class T>
void launch_mamba2_scan(const Mamba2CudaPlan& plan, const Mamba2Parameters& params, const Mamba2Tokens<T>& x,
                        float* state, T* out, CUstream_st* stream);

// The CUDA decode or prefill cell (cuda_cells.cpp; CUDA builds only). `backend` is the CUDA backend.
std::unique_ptr<PreparedCell> prepare_mamba2_cuda(const Cell& cell, std::uint64_t seed, Backend& backend);

}  // namespace arch_bench
