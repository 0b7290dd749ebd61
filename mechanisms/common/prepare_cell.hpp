#pragma once
// The one place that maps a cell's (phase, dtype) to a mechanism's prepared-cell class template, on
// every backend, so each mechanism's prepare() is a single line: the CPU cells take
// (cell, seed, allocator), the CUDA cells (cell, seed, backend).
#include <memory>
#include <utility>

#include "core/bf16.hpp"
#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// DecodeCell<T>(cell, args...) or PrefillCell<T>(cell, args...), T the cell's storage type.
template <template <class> class DecodeCell, template <class> class PrefillCell, class... Args>
std::unique_ptr<PreparedCell> prepare_cell(const Cell& cell, Args&&... args) {
  if (cell.phase == Phase::decode) {
    if (cell.dtype == DType::bfloat16) return std::make_unique<DecodeCell<bf16>>(cell, std::forward<Args>(args)...);
    return std::make_unique<DecodeCell<float>>(cell, std::forward<Args>(args)...);
  }
  if (cell.dtype == DType::bfloat16) return std::make_unique<PrefillCell<bf16>>(cell, std::forward<Args>(args)...);
  return std::make_unique<PrefillCell<float>>(cell, std::forward<Args>(args)...);
}

}  // namespace arch_bench
