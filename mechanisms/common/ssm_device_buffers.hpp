#pragma once
// The CUDA counterparts of SsmParameterBuffers (ssm_parameters.hpp) and SsmTokenBuffers
// (ssm_token_buffers.hpp), for mamba's and mamba2's cuda_cells.cpp and cuda_conformance.cpp: the
// layer's fp32 parameters and the five per-token inputs in device buffers, uploaded from the host
// values. The
// layouts are each mechanism's; the buffers, the uploads and how they are listed are the same.
// Built with CUDA only.
#include <cstdint>
#include <vector>

#include "core/backends/allocator.hpp"
#include "core/backends/backend.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"

namespace arch_bench {

// A = -exp(A_log) (Inputs::A(), or given), dt_bias and D in the backend's allocator; View is the kernels'
// pointer triple {A, dt_bias, D} (MambaParameters, Mamba2Parameters).
template <class View>
struct SsmDeviceParameters {
  template <class Inputs>
  SsmDeviceParameters(CudaBackend& cuda, const Inputs& in) : SsmDeviceParameters(cuda, in.A(), in.dt_bias, in.D) {}
  SsmDeviceParameters(CudaBackend& cuda, const std::vector<float>& A_values, const std::vector<float>& dt_bias_values,
                      const std::vector<float>& D_values)
      : A(cuda.allocator(), A_values.size()),
        dt_bias(cuda.allocator(), dt_bias_values.size()),
        D(cuda.allocator(), D_values.size()) {
    upload<float>(cuda, A_values.data(), static_cast<std::int64_t>(A_values.size()), A.data());
    upload<float>(cuda, dt_bias_values.data(), static_cast<std::int64_t>(dt_bias_values.size()), dt_bias.data());
    upload<float>(cuda, D_values.data(), static_cast<std::int64_t>(D_values.size()), D.data());
  }
  View view() const { return {A.data(), dt_bias.data(), D.data()}; }
  void add_spans(std::vector<ByteSpan>& spans) const {
    for (const ByteSpan span : {A.byte_span(), dt_bias.byte_span(), D.byte_span()}) spans.push_back(span);
  }
  Buffer<float> A, dt_bias, D;
};

// x (mamba's u), dt_raw, z, B and C of some tokens in storage T, from their fp32 host values, in any
// allocator (the cell's, or a staging one); View is the kernels' pointer set (MambaTokens,
// Mamba2Tokens).
template <class T, class View>
struct SsmDeviceTokens {
  SsmDeviceTokens(CudaBackend& cuda, Allocator& allocator, const std::vector<float>& x_values,
                  const std::vector<float>& dt_values, const std::vector<float>& z_values,
                  const std::vector<float>& B_values, const std::vector<float>& C_values)
      : x(allocator, x_values.size()),
        dt_raw(allocator, dt_values.size()),
        z(allocator, z_values.size()),
        B(allocator, B_values.size()),
        C(allocator, C_values.size()) {
    upload<T>(cuda, x_values.data(), static_cast<std::int64_t>(x_values.size()), x.data());
    upload<T>(cuda, dt_values.data(), static_cast<std::int64_t>(dt_values.size()), dt_raw.data());
    upload<T>(cuda, z_values.data(), static_cast<std::int64_t>(z_values.size()), z.data());
    upload<T>(cuda, B_values.data(), static_cast<std::int64_t>(B_values.size()), B.data());
    upload<T>(cuda, C_values.data(), static_cast<std::int64_t>(C_values.size()), C.data());
  }
  View view() const { return {x.data(), dt_raw.data(), z.data(), B.data(), C.data()}; }
  // Token t's inputs when every tensor holds its tokens one after another (token-major): x and z
  // `x_stride` values a token, dt_raw `dt_stride`, B and C `bc_stride`.
  View token(std::int64_t t, std::int64_t x_stride, std::int64_t dt_stride, std::int64_t bc_stride) const {
    return {x.data() + t * x_stride, dt_raw.data() + t * dt_stride, z.data() + t * x_stride,
            B.data() + t * bc_stride, C.data() + t * bc_stride};
  }
  void add_spans(std::vector<ByteSpan>& spans) const {
    for (const ByteSpan span : {x.byte_span(), dt_raw.byte_span(), z.byte_span(), B.byte_span(), C.byte_span()}) {
      spans.push_back(span);
    }
  }
  Buffer<T> x, dt_raw, z, B, C;
};

}  // namespace arch_bench
