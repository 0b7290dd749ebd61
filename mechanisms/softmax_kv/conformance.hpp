#pragma once
// softmax_kv's conformance adapter (mechanisms/softmax_kv/conformance.cpp), which its Mechanism::conformance() returns.
#include <cstdint>
#include <string>

#include "core/backends/backend.hpp"
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

const ConformanceAdapter& softmax_kv_conformance();

// The CPU run of an adapter for `mechanism` with a sliding window W > 0 (sliding_window: banded
// prefill, decode into a ring of min(length, W) rows, no state outputs) or 0 (softmax_kv's, with the
// k_cache and v_cache states): prefill, decode token by token and the fp64 reference. Checks dim
// <= 256 and that kv_heads divides heads (UsageError naming `mechanism`).
ConformanceOutputs attention_conformance_on_cpu(const std::string& mechanism, std::int64_t window,
                                                const ConformanceInputs& inputs, DType dtype);

// `arch-bench conformance --device cuda`: the CUDA kernels on the same inputs (mechanisms/softmax_kv/cuda_conformance.cpp,
// built with CUDA only), which the adapter's cuda_kernels() returns.
void softmax_kv_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& cuda);

// The same for `mechanism` with a sliding window W > 0 (sliding_window: banded prefill, decode into a
// ring of min(length, W) rows, no state outputs) or 0 (softmax_kv's).
void attention_conformance_on_cuda(const std::string& mechanism, std::int64_t window, const ConformanceInputs& inputs,
                                   DType dtype, ConformanceOutputs& out, Backend& cuda);

}  // namespace arch_bench
