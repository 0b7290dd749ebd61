#pragma once
// The register-resident bf16 prefill of softmax_kv and sliding_window (cuda_prefill_mma.cu), for
// plans whose path is SoftmaxPrefillPath::mma_bf16 (head_dim 64 and 128). cuda.cu dispatches to it;
// no CUDA headers here. Launches only enqueue on `stream`; errors throw CellFailure.
#include "mechanisms/softmax_kv/cuda_plan.hpp"

struct CUstream_st;

namespace arch_bench {

struct bf16;

// Raises the kernel's dynamic shared memory limit when the plan needs more than 48 KiB (head_dim
// 128). Once, at prepare time: not a stream operation.
void configure_softmax_prefill_mma(const SoftmaxPrefillCudaPlan& plan);

// Causal (banded with plan.window) prefill of plan.batch_heads query heads over plan.tokens tokens,
// query head bh reading K/V head bh / plan.group; layout [heads, tokens, head_dim].
void launch_softmax_prefill_mma(const SoftmaxPrefillCudaPlan& plan, const bf16* q, const bf16* k, const bf16* v,
                                bf16* out, CUstream_st* stream);

}  // namespace arch_bench
