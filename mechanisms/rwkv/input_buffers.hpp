#pragma once
// The per-token inputs a generation reads, one Buffer<T> each (host or device memory; the inputs it
// does not read stay empty), with the kernels' view of them and their buffer list. The CPU cells
// (cells.hpp) and the CUDA cells (cuda_cells.cpp) each fill them their own way.
#include <array>
#include <vector>

#include "core/backends/allocator.hpp"
#include "core/backends/backend.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/layout.hpp"

namespace arch_bench {

template <class T>
struct RwkvInputBuffers {
  explicit RwkvInputBuffers(RwkvVersion version) : used(rwkv_inputs_used(version)) {}

  RwkvTokens<T> view() const {
    return {buffers[kRwkvR].data(),     buffers[kRwkvK].data(),     buffers[kRwkvV].data(),
            buffers[kRwkvDecay].data(), buffers[kRwkvKappa].data(), buffers[kRwkvIclr].data()};
  }
  void add_spans(std::vector<ByteSpan>& spans) const {
    for (int i = 0; i < kRwkvInputCount; ++i) {
      if (used[i]) spans.push_back(buffers[i].byte_span());
    }
  }

  std::array<bool, kRwkvInputCount> used;
  std::array<Buffer<T>, kRwkvInputCount> buffers;
};

}  // namespace arch_bench
