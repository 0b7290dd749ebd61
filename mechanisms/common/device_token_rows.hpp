#pragma once
// The token rows a CUDA cell of an attention-shaped mechanism puts on its device: q, k and v of
// tokens [first, first + rows) of every head of the seeded inputs, in the kernels' layout
// [bh, rows, dim]: the decode step's token (first = L, rows = 1) and the context a decode cell's
// set-up folds into its state (first = 0, rows = L).
#include <cstdint>

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

}  // namespace arch_bench
