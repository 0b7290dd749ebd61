#pragma once
// fp64 reference of Mamba-2's SSD layer (Dao & Gu 2024, "Transformers are SSMs") for one head of
// one sequence, in its recurrent form. With A < 0 the head's scalar parameter:
//   dt_t  = softplus(dt_raw_t + dt_bias)
//   a_t   = exp(dt_t A)
//   H_t   = a_t H_{t-1} + dt_t x_t B_t^T          (H [P, N], H_{-1} = 0)
//   y_t   = H_t C_t + D x_t
//   out_t = y_t * silu(z_t)
// x_t, z_t are the head's P channels; B_t, C_t (N wide) are its group's, shared by heads / n_groups
// heads. The gate is the one Mamba-2's gated RMSNorm applies before it normalises; the norm itself
// (a per-token scale over d_inner) is not part of the mixer measured here.
#include <cstdint>
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// One head of one batch element.
struct Mamba2HeadSequenceD {
  MatrixD x, z;                // [tokens, P]
  std::vector<double> dt_raw;  // [tokens]
  MatrixD B, C;                // [tokens, N]
};

struct Mamba2HeadParametersD {
  double A = -1;  // < 0
  double dt_bias = 0;
  double D = 0;
};

struct Mamba2ReferenceResult {
  MatrixD outputs;  // [tokens, P]
  MatrixD state;    // H after the last token, [P, N]
};

// Rejects (std::invalid_argument) an empty sequence, P or N of zero, and any tensor whose shape
// disagrees with x ([tokens, P]) and B ([tokens, N]).
Mamba2ReferenceResult mamba2_ssd_scan(const Mamba2HeadSequenceD& x, const Mamba2HeadParametersD& p);

}  // namespace arch_bench
