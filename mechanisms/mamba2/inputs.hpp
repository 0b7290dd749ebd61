#pragma once
// Seeded inputs and parameters of one Mamba-2 (SSD) layer for a cell: heads = the cell's heads,
// P = its head_dim, N = state_size, B and C per group (n_groups). Sequence values are already rounded
// through the storage dtype and parameters are fp32, so the fp64 reference sees what the kernels see.
#include <cstdint>
#include <vector>

#include "core/cell.hpp"
#include "mechanisms/mamba2/reference.hpp"

namespace arch_bench {

// Tokens [first, first + count) of every row, in the kernels' layout (x, z [rows, count, P], dt_raw
// [rows, count], B, C [batch * groups, count, N]): a decode cell's context and its one token.
struct Mamba2TokenSlice {
  std::vector<float> x, dt_raw, z, B, C;
};

struct Mamba2Inputs {
  std::int64_t batch = 0;
  std::int64_t heads = 0;
  std::int64_t groups = 0;
  std::int64_t tokens = 0;      // decode: L + 1 (context plus the new token); prefill: L
  std::int64_t head_dim = 0;    // P
  std::int64_t state_size = 0;  // N
  // Head-major, as the kernels read them: one (batch, head)'s tokens are contiguous.
  std::vector<float> x, z;    // [batch, heads, tokens, P]
  std::vector<float> dt_raw;  // [batch, heads, tokens]: the dt projection's output before its bias
  std::vector<float> B, C;    // [batch, groups, tokens, N]
  // Per head, fp32 (Mamba-2's initialisation): A = -exp(A_log) with A uniform in [1, 16];
  // softplus(dt_bias) log-uniform in [1e-3, 1e-1]; D (ones at initialisation) uniform in [0.5, 1.5]
  // here, so that a kernel that drops the skip term is seen.
  std::vector<float> A_log, dt_bias, D;

  std::int64_t rows() const { return batch * heads; }
  std::int64_t group_of(std::int64_t head) const { return head / (heads / groups); }
  // A = -exp(A_log) rounded to fp32: the A the kernels read.
  std::vector<float> A() const;
  // (batch, head) row bh, tokens [0, rows), widened to fp64.
  Mamba2HeadSequenceD head_sequence(std::int64_t bh, std::int64_t rows) const;
  Mamba2HeadParametersD head_parameters(std::int64_t head) const;
  Mamba2TokenSlice slice(std::int64_t first, std::int64_t count) const;
};

// Draws the layer's inputs for `tokens` tokens of the cell: x, z, dt_raw, B, C ~ N(0, 1).
// Throws UsageError when n_groups does not divide the heads.
Mamba2Inputs make_mamba2_inputs(const Cell& cell, std::int64_t tokens, std::uint64_t seed);

}  // namespace arch_bench
