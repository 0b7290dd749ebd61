#pragma once
// The CPU prepared cells of softmax_kv and sliding_window (cpu_cells.cpp): one decode and one
// prefill cell, the window their only difference, as in the CUDA cells (cuda_cells.cpp).
#include <cstdint>
#include <memory>

#include "core/cell.hpp"

namespace arch_bench {

class Allocator;
class PreparedCell;

// window 0: softmax_kv's (decode appends to a cache of L + 1 rows, causal prefill); W > 0:
// sliding_window's (decode over its ring of min(L + 1, W) rows, mechanisms/sliding_window/ring.hpp,
// banded prefill). The same seeded inputs and fp64 checks (check.hpp) either way.
std::unique_ptr<PreparedCell> prepare_softmax_kv_cpu(const Cell& cell, std::uint64_t seed, Allocator& allocator,
                                                    std::int64_t window = 0);

}  // namespace arch_bench
