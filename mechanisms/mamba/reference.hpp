#pragma once
// fp64 reference of Mamba's selective scan (S6, Gu & Dao 2023) for one sequence, in its sequential
// form. Per channel c, with state h in R^N and A = -exp(A_log) < 0:
//   dt_t = softplus(dt_raw_t + dt_bias)
//   h_t  = exp(dt_t A) * h_{t-1} + dt_t B_t u_t      (h_{-1} = 0)
//   y_t  = C_t . h_t + D u_t
//   out_t = y_t * silu(z_t)
// B_t and C_t depend on the token and are shared by every channel, as in Mamba.
#include <cstdint>
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// One sequence of one batch element.
struct MambaSequenceD {
  MatrixD u, dt_raw, z;  // [tokens, d_inner]
  MatrixD B, C;          // [tokens, N]
};

struct MambaParametersD {
  MatrixD A_log;                // [d_inner, N]
  std::vector<double> dt_bias;  // [d_inner]
  std::vector<double> D;        // [d_inner]
};

struct MambaReferenceResult {
  MatrixD outputs;  // [tokens, d_inner]
  MatrixD state;    // h after the last token, [d_inner, N]
};

// Rejects (std::invalid_argument) an empty sequence, d_inner or N of zero, and any tensor whose
// shape disagrees with u ([tokens, d_inner]) and A_log ([d_inner, N]).
MambaReferenceResult mamba_selective_scan(const MambaSequenceD& x, const MambaParametersD& p);

}  // namespace arch_bench
