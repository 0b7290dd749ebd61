#pragma once
// The q, k, v and output buffers of an attention-style CPU cell in tracked storage T, filled from the
// drawn inputs: a decode cell's hold token t of every (batch, head) row, [batch_heads, dim] (the
// decode layout); a prefill cell's every token, [batch_heads, tokens, dim]. The output has v's size.
// Cells list them after their own buffers (common/cell_spans.hpp).
#include <cstdint>
#include <vector>

#include "core/backends/allocator.hpp"
#include "core/backends/backend.hpp"
#include "mechanisms/common/inputs.hpp"

namespace arch_bench {

template <class T>
struct QkvBuffers {
  // Token t of every row (a decode step's operands).
  QkvBuffers(Allocator& allocator, const AttentionInputs& inputs, std::int64_t t)
      : q(allocator, inputs.batch_heads * inputs.dim), k(allocator, q.size()), v(allocator, q.size()),
        out(allocator, q.size()) {
    store_token(inputs, t, q.data(), k.data(), v.data());
  }

  // Every token of every row (a prefill's operands).
  QkvBuffers(Allocator& allocator, const AttentionInputs& inputs)
      : q(allocator, inputs.q.size()), k(allocator, inputs.k.size()), v(allocator, inputs.v.size()),
        out(allocator, inputs.v.size()) {
    store(inputs.q.data(), static_cast<std::int64_t>(inputs.q.size()), q.data());
    store(inputs.k.data(), static_cast<std::int64_t>(inputs.k.size()), k.data());
    store(inputs.v.data(), static_cast<std::int64_t>(inputs.v.size()), v.data());
  }

  void add_spans(std::vector<ByteSpan>& spans) const {
    spans.insert(spans.end(), {q.byte_span(), k.byte_span(), v.byte_span(), out.byte_span()});
  }

  Buffer<T> q, k, v, out;
};

}  // namespace arch_bench
