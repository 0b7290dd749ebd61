#pragma once
// Launch planning of retnet's CUDA kernels (cuda.cu): one column recurrence
// (common/column_recurrence_plan.hpp) that runs `tokens` steps of S = gamma_h S + k v^T,
// o = S^T q with S in registers: the decode step is one step, the prefill the recurrent form over
// L tokens. Plain C++, tested on the CPU (tests/test_retnet_cuda_plan.cpp).
#include <cstdint>
#include <optional>
#include <string>

#include "core/cell.hpp"
#include "mechanisms/common/chunk_scalar_decay_plan.hpp"
#include "mechanisms/common/column_recurrence_plan.hpp"

namespace arch_bench {

// `multiprocessors` of the device spreads the heads' columns over blocks (0: one block per head).
ColumnRecurrencePlan plan_retnet_cuda(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                      std::int64_t dv, int multiprocessors);

// Whether a CUDA prefill of `cell` runs chunkwise on tensor cores (common/chunk_scalar_decay_plan.hpp):
// bf16 storage and head_dim a multiple of 16 up to 128. Every other prefill (fp32, whose 1e-4 tf32
// would break, and odd or wide heads) and every decode step run the column recurrence.
bool retnet_cuda_prefill_is_chunked(const Cell& cell);

// The chunkwise prefill's plan for `cell` (retnet_cuda_prefill_is_chunked must hold): its state pass
// the cell's state_pass option (common/chunk_scalar_decay_option.hpp) on a device of
// `multiprocessors` SMs (0: none known, auto is the three kernels).
ChunkScalarDecayPlan retnet_chunked_prefill_plan(const Cell& cell, int multiprocessors = 0);

// Device workspace of the cell's CUDA kernels: the chunkwise prefill's per-chunk states, else 0.
std::int64_t retnet_cuda_workspace_bytes(const Cell& cell);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> retnet_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
