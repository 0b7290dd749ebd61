#pragma once
// The options Mamba reads (Mechanism::option_specs()): declared once, here.
#include "core/cell.hpp"
#include "core/options.hpp"
#include "mechanisms/mamba/cpu.hpp"

namespace arch_bench {

// state_size: N, the state size per channel (default 16).
const OptionSpec& mamba_state_size_option();

// scan_kernel: which CUDA prefill kernel runs (cuda_plan.hpp, MambaScanKernel): auto (default: entry
// where N is 8 or 16, else lane), entry or lane. The CPU ignores it.
const OptionSpec& mamba_scan_kernel_option();

// The kernels' shape of a cell: d_inner = heads * head_dim channels per batch element, N from the
// options (the CPU and CUDA cells and the predictions all read it here).
MambaShape mamba_shape_of(const Cell& cell);

}  // namespace arch_bench
