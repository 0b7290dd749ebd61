#pragma once
// A mechanism's prepare on the CUDA backend (mechanisms/<id>/cuda_cells.cpp). The plan skips the
// cells the kernels cannot run (Mechanism::unsupported_on), so a cell that reaches prepare anyway is
// a mechanism error: it fails with the kernels' reason before any buffer is allocated.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/errors.hpp"
#include "mechanisms/common/prepare_cell.hpp"
#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Throws CellFailure("mechanism_error", why) when the kernels gave a reason.
inline void require_cuda_supported(const std::optional<std::string>& why) {
  if (why) throw CellFailure("mechanism_error", *why);
}

// DecodeCell<T>(cell, seed, backend) or PrefillCell<T>(...) once cuda_unsupported(cell) has no reason.
template <template <class> class DecodeCell, template <class> class PrefillCell, class Unsupported>
std::unique_ptr<PreparedCell> prepare_cuda_cell(Unsupported cuda_unsupported, const Cell& cell, std::uint64_t seed,
                                                Backend& backend) {
  require_cuda_supported(cuda_unsupported(cell));
  return prepare_cell<DecodeCell, PrefillCell>(cell, seed, backend);
}

}  // namespace arch_bench
