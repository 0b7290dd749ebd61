#pragma once
// Launch planning of the CUDA kernel of Mamba-2's SSD (cuda.cu): grid, block and shared memory as
// plain functions, compiled in every build and tested on the CPU (tests/test_mamba2_cuda_plan.cpp).
// Layouts are the CPU kernels' (cpu.hpp): x, z, out [rows, tokens, P], dt_raw [rows, tokens],
// B, C [batch * groups, tokens, N], the state S = H^T [rows, N, P] fp32.
//
// One kernel, the recurrence, serves decode (tokens = 1, the decode layouts are the same with one
// token) and prefill: one block per (batch, head) row, thread j owns state column j (a warp reads a
// row of S coalesced), walks the N rows of its column per token and accumulates y_j = sum_s C_s S_sj
// in a register, so no reduction is needed. B_t and C_t are staged in shared memory, once per token
// for the whole block. The bf16 prefill runs the chunked SSD on tensor cores instead
// (common/chunk_scalar_decay_plan.hpp: k = B_t, v = dt_t x_t, q = C_t, log a_t = dt_t A_h, S = H^T
// [N, P] as dk x dv), with D x and the silu(z) gate fused into its output stage.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/cell.hpp"
#include "mechanisms/common/chunk_scalar_decay_plan.hpp"
#include "mechanisms/mamba2/cpu.hpp"

namespace arch_bench {

inline constexpr int kMamba2CudaMaxThreads = 256;  // = kMamba2MaxHeadDim: one thread per column

struct Mamba2CudaPlan {
  std::int64_t rows = 0;  // batch * heads: one block each
  int heads = 0;
  int groups = 1;
  int head_dim = 0;
  int state_size = 0;
  std::int64_t tokens = 0;
  int threads = 0;               // head_dim rounded up to whole warps
  std::int64_t blocks = 0;       // rows
  std::size_t shared_bytes = 0;  // B_t and C_t: 2 N floats
};

// The B/C row (b * groups + g) of (batch, head) row bh: the kernel's and the CPU's group_row.
constexpr std::int64_t mamba2_cuda_group_row(std::int64_t bh, int heads, int groups) {
  return (bh / heads) * groups + (bh % heads) / (heads / groups);
}

// tokens = 1 for a decode step.
Mamba2CudaPlan plan_mamba2_cuda(const Mamba2Shape& shape, std::int64_t tokens);

// Whether a CUDA prefill of `cell` runs the chunked SSD on tensor cores: bf16 storage and N, P
// multiples of 16 up to 128 (the published 128 x 64 included). fp32 prefills (tf32 would break
// 1e-4), other sizes and every decode step run the recurrence.
bool mamba2_cuda_prefill_is_chunked(const Cell& cell);

// The chunked prefill's plan for `cell` (mamba2_cuda_prefill_is_chunked must hold): dk = N, dv = P;
// its state pass the cell's state_pass option on a device of `multiprocessors` SMs (0: none known).
ChunkScalarDecayPlan mamba2_chunked_prefill_plan(const Cell& cell, int multiprocessors = 0);

// Device workspace of the cell's CUDA kernels: the chunked prefill's per-chunk states, else 0.
std::int64_t mamba2_cuda_workspace_bytes(const Cell& cell);

// Why the CUDA kernel cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> mamba2_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
