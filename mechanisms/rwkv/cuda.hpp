#pragma once
// CUDA kernels of the three RWKV generations (rwkv4/cuda.cu, rwkv6/cuda.cu, rwkv7/cuda.cu) and their
// prepared cells (cuda_cells.cpp). Layouts as on the CPU (kernels.hpp): per-token inputs and the
// output [batch_heads, tokens, dim] in storage T (float or bf16), parameters fp32 [heads, dim], the
// state fp32 (rwkv4 [batch_heads, 3, dim]; rwkv6 S [batch_heads, key, value]; rwkv7 H [batch_heads,
// key, value]). One scan kernel per generation is both the decode step (a plan over one token) and
// the prefill (cuda_plan.hpp); the state carries in and out. Launchers only enqueue on `stream`;
// each launch is checked. No CUDA headers here: T = bf16 is arch_bench::bf16.
#include <cstdint>
#include <memory>

#include "core/bf16.hpp"
#include "mechanisms/rwkv/cuda_plan.hpp"
#include "mechanisms/rwkv/layout.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_plan.hpp"

struct CUstream_st;

namespace arch_bench {

class Backend;
class PreparedCell;

// rwkv4: a fresh state (a = b = 0, p = -1e38, as rwkv4_reset_state) and the WKV scan (reads k, v).
void launch_rwkv4_reset(const RwkvScanPlan& plan, float* state, CUstream_st* stream);
template <class T>
void launch_rwkv4_scan(const RwkvScanPlan& plan, const RwkvParameters& params, const RwkvTokens<T>& x, float* state,
                       T* out, CUstream_st* stream);
// rwkv6: reads r, k, v, decay (d_t) and params.u. A fresh state is zero.
template <class T>
void launch_rwkv6_scan(const RwkvScanPlan& plan, const RwkvParameters& params, const RwkvTokens<T>& x, float* state,
                       T* out, CUstream_st* stream);
// rwkv6's chunkwise tensor-core prefill (rwkv6/chunk_cuda.cu; bf16 only, head_dim a multiple of 16
// up to 128: rwkv6/chunk_plan.hpp), the bf16 prefill's path: the same inputs as the scan, continuing
// from `state` as it does; `workspace` holds plan.workspace_floats() floats (the cell's allocator).
// configure_rwkv6_chunked once per plan, at prepare time (not a stream operation): lets its kernels
// take the plan's shared memory past 48 KiB (common/dynamic_shared_memory.cuh).
void configure_rwkv6_chunked(const Rwkv6ChunkPlan& plan);
void launch_rwkv6_chunked(const Rwkv6ChunkPlan& plan, const RwkvParameters& params, const RwkvTokens<bf16>& x,
                          float* state, float* workspace, bf16* out, CUstream_st* stream);
// How many blocks of the chunk-state and output kernels one SM of the current device holds at the
// plan's shared memory (the runtime's occupancy calculator; configure_rwkv6_chunked first).
struct Rwkv6ChunkResidency {
  int state_blocks = 0;
  int output_blocks = 0;
};
Rwkv6ChunkResidency rwkv6_chunk_residency(const Rwkv6ChunkPlan& plan);
// rwkv7: reads r, k, v, decay (w_raw), kappa, iclr. A fresh state is zero.
template <class T>
void launch_rwkv7_scan(const RwkvScanPlan& plan, const RwkvParameters& params, const RwkvTokens<T>& x, float* state,
                       T* out, CUstream_st* stream);

// The scan of plan.version.
template <class T>
void launch_rwkv_scan(const RwkvScanPlan& plan, const RwkvParameters& params, const RwkvTokens<T>& x, float* state,
                      T* out, CUstream_st* stream) {
  switch (plan.version) {
    case RwkvVersion::v4: launch_rwkv4_scan<T>(plan, params, x, state, out, stream); return;
    case RwkvVersion::v6: launch_rwkv6_scan<T>(plan, params, x, state, out, stream); return;
    case RwkvVersion::v7: launch_rwkv7_scan<T>(plan, params, x, state, out, stream); return;
  }
}

// The CUDA decode or prefill cell of `version` (cuda_cells.cpp; CUDA builds only).
std::unique_ptr<PreparedCell> prepare_rwkv_cuda(RwkvVersion version, const Cell& cell, std::uint64_t seed,
                                                Backend& backend);

}  // namespace arch_bench
