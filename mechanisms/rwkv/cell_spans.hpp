#pragma once
// PreparedCell::buffers() of every RWKV cell, CPU (cells.hpp) or CUDA (cuda_cells.cpp): the state,
// the output, then the parameters' and the tokens' buffers, whose holders (host or device) each
// list their own with add_spans.
#include <vector>

#include "core/backends/backend.hpp"

namespace arch_bench {

template <class Parameters, class Tokens>
std::vector<ByteSpan> rwkv_cell_spans(ByteSpan state, ByteSpan out, const Parameters& params, const Tokens& tokens) {
  std::vector<ByteSpan> spans{state, out};
  params.add_spans(spans);
  tokens.add_spans(spans);
  return spans;
}

}  // namespace arch_bench
