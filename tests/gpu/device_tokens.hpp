#pragma once
// Tokens of an attention-shaped layer on the device, as the GPU tests hand them to a kernel directly
// (not through a prepared cell): q, k and v of every head in the kernels' layout [bh, rows, dim],
// and an output of that shape poisoned with NaN, so that a row the kernel does not write fails.
#include <cstdint>
#include <vector>

#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "mechanisms/common/inputs.hpp"

namespace arch_bench::testing {

template <class T>
struct DeviceTokens {
  // Tokens [first, first + rows) of every head of `in`.
  DeviceTokens(CudaBackend& cuda, const AttentionInputs& in, std::int64_t first, std::int64_t rows)
      : count(in.batch_heads * rows * in.dim),
        q(cuda.allocator(), static_cast<std::size_t>(count)),
        k(cuda.allocator(), q.size()),
        v(cuda.allocator(), q.size()),
        out(cuda.allocator(), q.size()) {
    upload<T>(cuda, in.head_rows(in.q, first, rows).data(), count, q.data());
    upload<T>(cuda, in.head_rows(in.k, first, rows).data(), count, k.data());
    upload<T>(cuda, in.head_rows(in.v, first, rows).data(), count, v.data());
    poison(cuda, out.data(), out.bytes());
  }
  // The output after the kernel launched on cuda's stream: [bh, rows, dim].
  std::vector<float> output(CudaBackend& cuda) const {
    cuda.synchronize();
    return download<T>(cuda, out.data(), count);
  }
  std::int64_t count;
  Buffer<T> q, k, v, out;
};

}  // namespace arch_bench::testing
