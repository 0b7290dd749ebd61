#pragma once
// Launch planning of gated_deltanet's CUDA kernels (cuda.cu): one column recurrence
// (common/column_recurrence_plan.hpp) that runs `tokens` steps of the gated delta rule with S in
// registers: the decode step is one step, the prefill the sequential form over L tokens. Plain C++,
// tested on the CPU (tests/test_gated_deltanet_cuda_plan.cpp).
#include <cstdint>
#include <optional>
#include <string>

#include "core/cell.hpp"
#include "mechanisms/common/column_recurrence_plan.hpp"

namespace arch_bench {

// Staged per token beside q, k and v: alpha = exp(g) and beta.
inline constexpr int kGatedDeltaNetStagedGates = 2;

// `multiprocessors` of the device spreads the heads' columns over blocks (0: one block per head).
ColumnRecurrencePlan plan_gated_deltanet_cuda(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                              std::int64_t dv, int multiprocessors);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> gated_deltanet_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
