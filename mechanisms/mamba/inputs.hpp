#pragma once
// Seeded inputs and parameters of one Mamba (S6) layer for a cell. The layer's inner width is
// d_inner = heads * head_dim, so a mamba row carries as many channels as an attention row of the
// same cell and the two are compared on equal widths. Sequence values are already rounded through
// the storage dtype and parameters are fp32: the fp64 reference sees exactly what the kernel sees.
#include <cstdint>
#include <vector>

#include "mechanisms/mamba/reference.hpp"
#include "core/cell.hpp"

namespace arch_bench {

struct MambaInputs {
  std::int64_t batch = 0;
  std::int64_t tokens = 0;      // decode: L + 1 (context plus the new token); prefill: L
  std::int64_t channels = 0;    // d_inner
  std::int64_t state_size = 0;  // N
  // Per token and channel, channel-major [batch, channels, tokens] as Mamba's selective_scan
  // takes them ((B, D, L)): one channel's scan reads contiguous memory.
  std::vector<float> u, dt_raw, z;
  // Per token, shared by every channel (input-dependent B_t, C_t), token-major [batch, tokens, N]
  // so that one token's N-vector is contiguous for the loop over the state.
  std::vector<float> B, C;
  // Parameters of the layer (shared across the batch), fp32. S4D-real init: A_log[c][n] =
  // log(n + 1), so A = -exp(A_log) = -(1..N) on every row.
  std::vector<float> A_log;    // [channels, N]
  std::vector<float> dt_bias;  // [channels]: softplus(dt_bias) log-uniform in [1e-3, 1e-1]
  std::vector<float> D;        // [channels]: skip connection, uniform in [0.5, 1.5]

  std::int64_t rows() const { return batch * channels; }
  // Row r = b * channels + c of a channel-major tensor, from token 0.
  const float* row(const std::vector<float>& x, std::int64_t r) const { return x.data() + r * tokens; }
  // Token t of batch b of B or C: N values.
  const float* token(const std::vector<float>& x, std::int64_t b, std::int64_t t) const {
    return x.data() + (b * tokens + t) * state_size;
  }
  // A = -exp(A_log) rounded to fp32: the A the kernels read (Mamba computes it the same way).
  std::vector<float> A() const;

  // Batch b, tokens [0, rows), widened to fp64 in the reference's [tokens, ...] layout.
  MambaSequenceD reference_sequence(std::int64_t b, std::int64_t rows) const;
  MambaParametersD reference_parameters() const;
};

// Draws a Mamba layer's inputs for `tokens` tokens of the cell: u, z, dt_raw ~ N(0, 1)
// (dt_raw: the dt projection's output before its bias); B, C ~ N(0, 1).
MambaInputs make_mamba_inputs(const Cell& cell, std::int64_t tokens, std::uint64_t seed);

}  // namespace arch_bench
