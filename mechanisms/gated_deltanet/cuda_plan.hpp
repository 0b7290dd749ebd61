#pragma once
// Launch planning of gated_deltanet's CUDA kernels (cuda.cu): one column recurrence
// (common/column_recurrence_plan.hpp) that runs `tokens` steps of the gated delta rule with S in
// registers: the decode step is one step, the fp32 prefill (and a head size the tensor cores do not
// take) the sequential form over L tokens; and the bf16 prefill chunkwise on tensor cores
// (common/chunk_delta_rule_plan.hpp). Plain C++, tested on the CPU
// (tests/test_column_recurrence_plan.cpp, tests/test_chunk_delta_rule_plan.cpp).
#include <cstdint>
#include <optional>
#include <string>

#include "core/cell.hpp"
#include "mechanisms/common/chunk_delta_rule_plan.hpp"
#include "mechanisms/common/column_recurrence_plan.hpp"

namespace arch_bench {

// Staged per token beside q, k and v: alpha = exp(g) and beta.
inline constexpr int kGatedDeltaNetStagedGates = 2;

// `multiprocessors` of the device spreads the heads' columns over blocks (0: one block per head).
ColumnRecurrencePlan plan_gated_deltanet_cuda(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                              std::int64_t dv, int multiprocessors);

// Whether a CUDA prefill of `cell` runs chunkwise on tensor cores: bf16 storage and head_dim a
// multiple of 16 up to 128. Every other prefill (fp32, whose 1e-4 bf16 operands would break, and
// odd or wide heads) and every decode step run the column recurrence.
bool gated_deltanet_cuda_prefill_is_chunked(const Cell& cell);

// The chunkwise prefill's plan for `cell` (gated_deltanet_cuda_prefill_is_chunked must hold) on a
// device of `multiprocessors` (it picks the value tile of the sequential pass).
ChunkDeltaRulePlan gated_deltanet_chunked_prefill_plan(const Cell& cell, int multiprocessors);

// Device workspace of the cell's CUDA kernels: the chunkwise prefill's per-chunk operands, else 0.
std::int64_t gated_deltanet_cuda_workspace_bytes(const Cell& cell);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> gated_deltanet_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
