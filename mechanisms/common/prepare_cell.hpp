#pragma once
// The one place that maps a cell's (phase, dtype) to a mechanism's prepared-cell class template,
// so each mechanism's prepare() is a single line.
#include <memory>

#include "core/bf16.hpp"
#include "mechanisms/mechanism.hpp"

namespace arch_bench {

template <template <class> class DecodeCell, template <class> class PrefillCell>
std::unique_ptr<PreparedCell> prepare_cell(const Cell& cell, std::uint64_t seed, Allocator& allocator) {
  if (cell.phase == Phase::decode) {
    if (cell.dtype == DType::bfloat16) return std::make_unique<DecodeCell<bf16>>(cell, seed, allocator);
    return std::make_unique<DecodeCell<float>>(cell, seed, allocator);
  }
  if (cell.dtype == DType::bfloat16) return std::make_unique<PrefillCell<bf16>>(cell, seed, allocator);
  return std::make_unique<PrefillCell<float>>(cell, seed, allocator);
}

}  // namespace arch_bench
