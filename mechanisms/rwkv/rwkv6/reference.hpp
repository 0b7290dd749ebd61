#pragma once
// fp64 reference of RWKV-6 (Finch) time mixing for one head, in its recurrent form. With S [dk, dv]
// (row i = key channel), per-token decay w_t = exp(-exp(d_t)) per key channel and bonus u:
//   o_t = r_t^T (S_{t-1} + diag(u) k_t v_t^T)
//   S_t = diag(w_t) S_{t-1} + k_t v_t^T                           (S_{-1} = 0)
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

struct RwkvMatrixResult {
  MatrixD outputs;  // [tokens, dim]
  MatrixD state;    // after the last token
};

// r, k, v, d [tokens, dim]; u [dim]. Throws std::invalid_argument on an empty or mismatched input.
RwkvMatrixResult rwkv6_reference(const MatrixD& r, const MatrixD& k, const MatrixD& v, const MatrixD& d,
                                 const std::vector<double>& u);

}  // namespace arch_bench
