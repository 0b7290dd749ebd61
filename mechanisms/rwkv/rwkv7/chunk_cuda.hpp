#pragma once
// RWKV-7's chunkwise tensor-core prefill (rwkv7/chunk_cuda.cu, planned in chunk_plan.hpp; bf16
// only, head_dim a multiple of 16 up to 128): the bf16 prefill's path on CUDA. The same inputs as
// rwkv7's scan (r, k, v, decay = w_raw, kappa, iclr [batch_heads, tokens, dim]) and the same state
// H [batch_heads, key, value] fp32, continued from and left in `state`. No CUDA headers here.
#include "core/bf16.hpp"
#include "mechanisms/rwkv/layout.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_plan.hpp"

struct CUstream_st;

namespace arch_bench {

// Once per plan, at prepare time (not a stream operation): lets both kernels take the plan's
// shared memory past 48 KiB (common/dynamic_shared_memory.cuh).
void configure_rwkv7_chunked(const Rwkv7ChunkPlan& plan);

// The two kernels in order on `stream`, each launch checked; `workspace` holds plan.workspace_floats().
void launch_rwkv7_chunked(const Rwkv7ChunkPlan& plan, const RwkvTokens<bf16>& x, float* state, float* workspace,
                          bf16* out, CUstream_st* stream);

}  // namespace arch_bench
