#pragma once
// Shared host code of the mechanisms' GPU conformance (mechanisms/<id>/cuda_conformance.cpp): uploads in
// the kernels' layouts, poisoned outputs, downloads, and writing the GPU's values over the adapter's
// CPU outputs. Built with CUDA only (mechanisms/common/cuda_conformance.cpp), as cuda_cells.cpp is.
#include <cstdint>
#include <string>
#include <vector>

#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

// [rows, tokens, width] <-> [tokens, rows, width]: a decode step reads token t of every row as one
// contiguous [rows, width] block, so the whole sequence is uploaded once and stepped by offsets.
std::vector<float> token_major(const std::vector<float>& x, std::int64_t rows, std::int64_t tokens,
                               std::int64_t width);
std::vector<float> row_major(const std::vector<float>& x, std::int64_t rows, std::int64_t tokens, std::int64_t width);

// Overwrites the values of `array` (shape and file dtype kept) with the GPU's.
void replace_values(NpyArray& array, const std::vector<float>& values);
ConformanceState& state_named(ConformanceOutputs& out, const std::string& name);
// A state from the prefill and, when the adapter keeps one, the decode loop's copy.
void replace_state(ConformanceOutputs& out, const std::string& name, const std::vector<float>& prefill,
                   const std::vector<float>& decode);

template <class T>
Buffer<T> device_copy(CudaBackend& cuda, const std::vector<float>& values) {
  Buffer<T> buffer(cuda.allocator(), values.size());
  upload<T>(cuda, values.data(), static_cast<std::int64_t>(values.size()), buffer.data());
  return buffer;
}
template <class T>
Buffer<T> device_output(CudaBackend& cuda, std::size_t count) {
  Buffer<T> buffer(cuda.allocator(), count);
  poison(cuda, buffer.data(), buffer.bytes());  // a value the kernel never wrote fails the comparison
  return buffer;
}
template <class T>
std::vector<float> fetch(CudaBackend& cuda, const Buffer<T>& buffer) {
  cuda.synchronize();
  return download<T>(cuda, buffer.data(), static_cast<std::int64_t>(buffer.size()));
}
Buffer<float> device_zeros(CudaBackend& cuda, std::size_t count);

// Throws UsageError ("--device cuda: ...") when the mechanism, or its CUDA kernels, cannot take `cell`.
void require_cuda_cell(const Cell& cell);
// The prefill cell of an attention layout's inputs (batch, heads, length), of head_dim `width`.
Cell attention_cell(const std::string& mechanism, const ConformanceInputs& inputs, DType dtype,
                    const MechanismOptions& options, std::int64_t width);

// q, k, v of an attention layout, rounded to the storage dtype: [bh, L, dim | dv].
struct AttentionValues {
  std::int64_t bh, length, dk, dv;
  std::vector<float> q, k, v;
  AttentionValues(const ConformanceInputs& inputs, DType dtype, bool has_dv)
      : bh(inputs.axis("batch") * inputs.axis("heads")),
        length(inputs.axis("length")),
        dk(inputs.axis("dim")),
        dv(has_dv ? inputs.axis("dv") : dk),
        q(to_storage_values(inputs.at("q"), dtype)),
        k(to_storage_values(inputs.at("k"), dtype)),
        v(to_storage_values(inputs.at("v"), dtype)) {}
};

// Runs `run` with the storage type of `dtype` (float or bf16) and the CUDA backend, then waits for the stream:
//   run_for_storage(dtype, backend, [&]<class T>(CudaBackend& cuda) { my_kernels_on_cuda<T>(..., cuda); });
template <class Run>
void run_for_storage(DType dtype, Backend& backend, Run run) {
  CudaBackend& cuda = cuda_backend_of(backend);
  if (dtype == DType::bfloat16) {
    run.template operator()<bf16>(cuda);
  } else {
    run.template operator()<float>(cuda);
  }
  cuda.synchronize();
}

}  // namespace arch_bench
