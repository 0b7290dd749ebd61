#pragma once
// PreparedCell::buffers() of a cell that keeps some of its buffers in groups (its parameters, its
// per-token inputs) which list their own with add_spans: the cell's own buffers first (state,
// output, workspace), then each group's, on the CPU or on a device alike.
#include <initializer_list>
#include <vector>

#include "core/backends/backend.hpp"

namespace arch_bench {

template <class... Groups>
std::vector<ByteSpan> cell_spans(std::initializer_list<ByteSpan> own, const Groups&... groups) {
  std::vector<ByteSpan> spans(own);
  (groups.add_spans(spans), ...);
  return spans;
}

}  // namespace arch_bench
