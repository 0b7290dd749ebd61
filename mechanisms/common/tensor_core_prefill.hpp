#pragma once
// Which CUDA prefill a mechanism with a chunkwise tensor-core form runs (retnet, mamba2 and
// linear_attention through chunk_scalar_decay; gated_deltanet through chunk_delta_rule): the
// chunkwise kernels for a bf16 prefill whose head sizes they take, the mechanism's SIMT kernels for
// everything else. fp32 storage must meet 1e-4, which the kernels' bf16 operands would break; a
// decode step is one token, with no chunk to form.
#include "core/cell.hpp"

namespace arch_bench {

inline bool prefill_runs_on_tensor_cores(const Cell& cell, bool kernels_take_the_head_sizes) {
  return cell.phase == Phase::prefill && cell.dtype == DType::bfloat16 && kernels_take_the_head_sizes;
}

}  // namespace arch_bench
