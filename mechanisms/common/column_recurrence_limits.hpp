#pragma once
// The limits every column recurrence (column_recurrence_plan.hpp) puts on a cell, in one place for
// the mechanisms that run one (retnet, gated_deltanet: mechanisms/<id>/cuda_plan.cpp). Plain C++.
#include <cstdint>
#include <optional>
#include <string>

#include "core/cell.hpp"

namespace arch_bench {

// Why a column recurrence of mechanism `id` cannot run `cell`, or nullopt: head_dim outside
// 1..max_head_dim, no heads, a negative length, more blocks than the grid takes at the widest plan
// (one warp per block), or a stage of more than 48 KiB of shared memory with `extra_per_token`
// staged floats per token beside q, k and v.
std::optional<std::string> column_recurrence_unsupported(const Cell& cell, const std::string& id,
                                                         std::int64_t max_head_dim, int extra_per_token);

}  // namespace arch_bench
