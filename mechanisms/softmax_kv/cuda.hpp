#pragma once
// CUDA kernels of softmax attention with an explicit K/V cache (cuda.cu) and its prepared cells
// (cuda_cells.cpp). Layout as on the CPU: [batch_heads, tokens, dim], storage T in {float, bf16}
// (arch_bench::bf16 has the bits of __nv_bfloat16), fp32 accumulation. No CUDA headers here: the
// launchers take the stream as CUstream_st* (cudaStream_t) and every pointer is a device pointer.
// Every launch only enqueues on `stream` (no allocation, no synchronisation): it can be timed with
// events and captured into a CUDA graph. Launch or configuration errors throw CellFailure.
#include <cstdint>
#include <memory>

#include "mechanisms/softmax_kv/cuda_plan.hpp"

struct CUstream_st;

namespace arch_bench {

struct bf16;
class Backend;
class PreparedCell;

// One decode step: o = softmax(q K^T / sqrt(d)) V over cache rows [0, plan.context) of each query
// head's K/V head, where row `append_row` (< plan.context) is the new token: it is read from
// k_new/v_new, and the one block of its K/V head whose split holds it copies it into the cache
// there. softmax_kv's cache appends at row position (context position + 1); sliding_window's ring
// (mechanisms/sliding_window/ring.hpp) at slot position % slots, attending over its filled slots.
// `workspace` holds plan.workspace_floats() floats (unused when plan.splits == 1).
template <class T>
void launch_softmax_decode(const SoftmaxDecodeCudaPlan& plan, const T* q, const T* k_new, const T* v_new,
                           T* k_cache, T* v_cache, std::int64_t append_row, float* workspace, T* out,
                           CUstream_st* stream);

// Raises the prefill kernel's dynamic shared memory limit when the plan needs more than 48 KiB.
// Call once before launching (at prepare time: it is not a stream operation).
template <class T>
void configure_softmax_prefill(const SoftmaxPrefillCudaPlan& plan);

// Causal prefill over plan.tokens tokens (tiled online softmax; no L x L matrix in memory); with
// plan.window > 0, banded: query t attends keys (t - window, t], key tiles outside skipped.
template <class T>
void launch_softmax_prefill(const SoftmaxPrefillCudaPlan& plan, const T* q, const T* k, const T* v, T* out,
                            CUstream_st* stream);

// The CUDA prepared cell for `cell` (decode or prefill, fp32 or bf16) on the CUDA backend; the same
// seeded inputs and fp64 checks as the CPU cells. window 0: softmax_kv's; W > 0: sliding_window's
// (decode over its ring of min(L + 1, W) rows, banded prefill).
std::unique_ptr<PreparedCell> prepare_softmax_kv_cuda(const Cell& cell, std::uint64_t seed, Backend& backend,
                                                     std::int64_t window = 0);

}  // namespace arch_bench
