#pragma once
// Launch planning of retnet's CUDA kernels (cuda.cu): one column recurrence
// (common/column_recurrence_plan.hpp) that runs `tokens` steps of S = gamma_h S + k v^T,
// o = S^T q with S in registers: the decode step is one step, the prefill the recurrent form over
// L tokens. Plain C++, tested on the CPU (tests/test_retnet_cuda_plan.cpp).
#include <cstdint>
#include <optional>
#include <string>

#include "core/cell.hpp"
#include "mechanisms/common/column_recurrence_plan.hpp"

namespace arch_bench {

// `multiprocessors` of the device spreads the heads' columns over blocks (0: one block per head).
ColumnRecurrencePlan plan_retnet_cuda(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                      std::int64_t dv, int multiprocessors);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> retnet_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
