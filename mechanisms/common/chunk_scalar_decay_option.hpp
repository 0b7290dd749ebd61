#pragma once
// The state_pass option of the chunkwise scalar-decay prefill (chunk_scalar_decay_plan.hpp), which
// retnet, mamba2 and linear_attention all run: declared once, here, so the three take the same
// flag, values and default (option_catalog.hpp merges one key several mechanisms declare).
#include "core/cell.hpp"
#include "core/options.hpp"
#include "mechanisms/common/chunk_scalar_decay_plan.hpp"

namespace arch_bench {

// state_pass: auto (default: fused where its grid is one wave covering every SM, else the three
// kernels: chunk_scalar_decay_state_pass), fused or three_kernel. An axis on every mode, so one run measures both side by side.
// Only the bf16 CUDA prefill reads it; the CPU and the fp32 recurrence ignore it.
const OptionSpec& scalar_decay_state_pass_option();

// The cell's choice.
ScalarDecayStatePassChoice scalar_decay_state_pass_choice_of(const Cell& cell);

}  // namespace arch_bench
