#pragma once
// The fp64 recurrent reference of every head of a cell, shared by the CPU cells (mechanism.cpp) and
// the CUDA cells (cuda_cells.cpp): both check their outputs against the same rows.
#include <cstdint>
#include <vector>

#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/matrix.hpp"
#include "mechanisms/performer/cpu.hpp"
#include "mechanisms/performer/reference.hpp"

namespace arch_bench {

// Every head over its first `tokens` tokens, the heads on the OpenMP team (at L = 8192 and m = 256
// one head is ~10^9 flops). A stop request skips the heads not yet started and is raised after the
// parallel region (core/stop_request.hpp).
std::vector<PerformerResult> performer_reference_heads(const AttentionInputs& inputs, std::int64_t tokens,
                                                       const PerformerShape& shape, const MatrixD& projection);

}  // namespace arch_bench
