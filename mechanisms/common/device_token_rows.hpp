#pragma once
// The token rows a CUDA cell of an attention-shaped mechanism puts on its device: q, k and v of
// tokens [first, first + rows) of every head of the seeded inputs, in the kernels' layout
// [bh, rows, dim]: the decode step's token (first = L, rows = 1) and the context a decode cell's
// set-up folds into its state (first = 0, rows = L).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/backends/allocator.hpp"
#include "core/backends/backend.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "mechanisms/common/inputs.hpp"

namespace arch_bench {

// q, k, v: device buffers of batch_heads * rows * dim elements each, written on cuda's stream.
template <class T>
void upload_token_rows(CudaBackend& cuda, const AttentionInputs& inputs, std::int64_t first, std::int64_t rows, T* q,
                       T* k, T* v) {
  const std::int64_t count = inputs.batch_heads * rows * inputs.dim;
  upload<T>(cuda, inputs.head_rows(inputs.q, first, rows).data(), count, q);
  upload<T>(cuda, inputs.head_rows(inputs.k, first, rows).data(), count, k);
  upload<T>(cuda, inputs.head_rows(inputs.v, first, rows).data(), count, v);
}

// The q, k, v and output buffers of an attention-shaped CUDA cell (the device side of
// common/qkv_buffers.hpp), from `allocator`, written on cuda's stream and the output poisoned: the
// token rows [first, first + rows) of every head (a decode step's operands: first = L, rows = 1;
// the context a decode cell folds into its state: first = 0, rows = L), or every token (a prefill's).
// Cells list them after their own buffers (common/cell_spans.hpp).
template <class T>
struct DeviceQkv {
  DeviceQkv(CudaBackend& cuda, Allocator& allocator, const AttentionInputs& inputs, std::int64_t first,
            std::int64_t rows)
      : q(allocator, static_cast<std::size_t>(inputs.batch_heads * rows * inputs.dim)),
        k(allocator, q.size()),
        v(allocator, q.size()),
        out(allocator, q.size()) {
    upload_token_rows<T>(cuda, inputs, first, rows, q.data(), k.data(), v.data());
    poison(cuda, out.data(), out.bytes());
  }
  DeviceQkv(CudaBackend& cuda, Allocator& allocator, const AttentionInputs& inputs)
      : q(allocator, inputs.q.size()), k(allocator, inputs.k.size()), v(allocator, inputs.v.size()),
        out(allocator, inputs.v.size()) {
    upload<T>(cuda, inputs.q.data(), static_cast<std::int64_t>(q.size()), q.data());
    upload<T>(cuda, inputs.k.data(), static_cast<std::int64_t>(k.size()), k.data());
    upload<T>(cuda, inputs.v.data(), static_cast<std::int64_t>(v.size()), v.data());
    poison(cuda, out.data(), out.bytes());
  }
  void add_spans(std::vector<ByteSpan>& spans) const {
    spans.insert(spans.end(), {q.byte_span(), k.byte_span(), v.byte_span(), out.byte_span()});
  }
  // The output, downloaded and widened to fp32 (the cells' check()).
  std::vector<float> download_out(CudaBackend& cuda) const {
    return download<T>(cuda, out.data(), static_cast<std::int64_t>(out.size()));
  }
  Buffer<T> q, k, v, out;
};

}  // namespace arch_bench
